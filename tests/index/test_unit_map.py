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
