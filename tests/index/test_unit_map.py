"""Unit numbering from patient and visit ids (``index.unit_map``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from clinsearch.index.unit_map import UnitMap, dictionary_codes


def test_ids_in_several_chunks_with_missing_values_are_numbered() -> None:
    patients = pa.chunked_array([["p1", None], ["p2", "p1", None]])
    visits = pa.chunked_array([["v1", "v1"], [None, "v2", "v1"]])
    units = UnitMap.from_ids(np.arange(5), patients, visits)
    assert units.report_patient.tolist() == [0, 1, 2, 0, 1]  # missing ids: one group
    assert units.report_visit.tolist() == [0, 1, 2, 3, 1]
    values, codes = dictionary_codes(patients)
    assert [values[c] for c in codes.tolist()] == ["p1", None, "p2", "p1", None]


def test_numbering_follows_first_appearance_whatever_the_codes() -> None:
    # Codes already in first-appearance order, or not; visit ids shared by patients, or not.
    patients = pa.array(["b", "b", "a", "c", "a"])
    ordered = pa.array(["b", "b", "a", "c", "a"]).dictionary_encode()
    shuffled = pa.DictionaryArray.from_arrays(pa.array([2, 2, 0, 1, 0]), ["a", "c", "b"])
    for ids in (patients, ordered, shuffled):
        assert UnitMap.from_ids(np.arange(5), ids, ids).report_patient.tolist() == [0, 0, 1, 2, 1]
    shared = pa.array(["v2", "v1", "v1", "v1", "v2"])  # v1 of b, a and c; v2 of b and a
    units = UnitMap.from_ids(np.arange(5), patients, shared)
    assert units.report_visit.tolist() == [0, 1, 2, 3, 4]
    own = pa.array(["b2", "b1", "a1", "c1", "a1"])
    assert UnitMap.from_ids(np.arange(5), patients, own).report_visit.tolist() == [0, 1, 2, 3, 2]
