"""Concept postings: every finding is posted under its concept and each ancestor, sorted by key."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.errors import ClinsearchError
from clinsearch.index.component import (
    DELETED_FILE,
    SENTENCE_BITS,
    Generation,
    Segment,
    sentence_codes,
    sentence_parts,
)
from clinsearch.index.concept_postings import ConceptComponent, ConceptIndex, write_postings
from clinsearch.index.findings import FINDINGS_SCHEMA

HIERARCHY = Hierarchy({
    "opacity": (), "pneumonia": ("opacity",), "lobar_pneumonia": ("pneumonia",),
    "pleural_effusion": (),
})


def write_findings(folder: Path, rows: list[tuple[str, str, str, str]]) -> None:
    """findings.parquet with (sentence_id "r<n>#<i>", concept, polarity, modifiers "a|b") rows;
    report "r<n>" gets key n."""
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(schema=FINDINGS_SCHEMA, mapping=[
        {"report_key": int(sid[1:].split("#")[0]), "sentence_index": int(sid.split("#")[1]),
         "sentence_id": sid, "report_id": sid.split("#")[0], "visit_id": "v", "patient_id": "p",
         "concept": concept, "type": "disease", "polarity": pol,
         "pattern": "|".join(["disease", pol, concept.replace("_", " "), *filter(None, [mods])]),
         "start": 0, "end": 3, "text": concept,
         "modifiers": [{"category": "laterality", "value": m, "text": m, "start": 0, "end": 1}
                       for m in filter(None, [mods])]}
        for sid, concept, pol, mods in rows
    ])
    pq.write_table(table, folder / "findings.parquet")


def one_segment(root: Path) -> tuple[Generation, Path]:
    """A generation of one segment (no core tables: these tests read findings only)."""
    gen = Generation(root, (Segment("s000001", 0, 0, 0, 0),))
    return gen, gen.segment_path(gen.segments[0])


def test_findings_are_posted_under_their_concept_and_every_ancestor(tmp_path: Path) -> None:
    rows = [("r1#0", "lobar_pneumonia", "present", "right"), ("r1#1", "pneumonia", "absent", ""),
            ("r2#0", "pleural_effusion", "present", ""), ("r3#0", "opacity", "present", ""),
            ("r3#1", "lobar_pneumonia", "uncertain", "")]
    gen, folder = one_segment(tmp_path)
    write_findings(folder, rows)
    info = write_postings(folder, HIERARCHY)
    assert info == {"keys": 4, "postings": 2 * 3 + 1 * 2 + 1 + 1}
    index = ConceptIndex.open(gen)
    opacity = index.lookup("opacity")
    assert opacity.rows.tolist() == [3, 1, 0, 4]  # by depth, then row
    assert opacity.depths.tolist() == [0, 1, 2, 2]
    assert index.lookup("opacity", exact=True).rows.tolist() == [3]
    assert index.lookup("pneumonia").rows.tolist() == [1, 0, 4]
    assert index.lookup("absent_concept").rows.tolist() == []
    sentences = index.lookup("lobar_pneumonia").sentences
    assert sentences.tolist() == sentence_codes([1, 3], [0, 1]).tolist()
    code = index.pattern_of(0)
    assert index.patterns[code].text == "disease|present|lobar pneumonia|right"
    assert index.patterns[code].concept == "lobar_pneumonia"
    assert index.patterns[code].polarity == "present"
    assert index.patterns[code].modifiers == ("right",)


def test_postings_follow_the_findings_table_when_it_changes(tmp_path: Path) -> None:
    gen, folder = one_segment(tmp_path)
    write_findings(folder, [("r1#0", "pneumonia", "present", "")])
    write_postings(folder, HIERARCHY)
    write_findings(folder, [("r2#0", "pleural_effusion", "present", ""),
                            ("r2#1", "pneumonia", "present", "")])
    write_postings(folder, HIERARCHY)
    index = ConceptIndex.open(gen)
    keys, indexes = sentence_parts(index.lookup("pneumonia").sentences)
    assert list(zip(keys.tolist(), indexes.tolist(), strict=True)) == [(2, 1)]


def test_lookup_returns_only_the_concepts_postings(tmp_path: Path) -> None:
    rows = [(f"r{i}#0", "pleural_effusion", "present", "") for i in range(20000)]
    rows.append(("r20000#0", "pneumonia", "present", ""))
    gen, folder = one_segment(tmp_path)
    write_findings(folder, rows)
    write_postings(folder, HIERARCHY)
    index = ConceptIndex.open(gen)
    posting = index.lookup("pneumonia")
    assert posting.rows.tolist() == [20000]
    assert len(index.lookup("pleural_effusion").rows) == 20000
    assert len(index.lookup("opacity").rows) == 1


def test_segments_combine_as_one_table_without_deleted_reports(tmp_path: Path) -> None:
    rows = [("r0#0", "lobar_pneumonia", "present", ""), ("r1#0", "opacity", "present", ""),
            ("r2#0", "pneumonia", "absent", ""), ("r3#0", "lobar_pneumonia", "present", ""),
            ("r4#0", "opacity", "present", ""), ("r5#0", "pneumonia", "present", "")]
    whole, folder = one_segment(tmp_path / "whole")
    write_findings(folder, [r for r in rows if r[0] != "r4#0"])
    write_postings(folder, HIERARCHY)
    split = Generation(tmp_path / "split", (Segment("s000001", 0, 2, 3, 3),
                                            Segment("s000002", 3, 5, 3, 3)))
    for segment, part in zip(split.segments, (rows[:3], rows[3:]), strict=True):
        write_findings(split.segment_path(segment), part)
        write_postings(split.segment_path(segment), HIERARCHY)
    pq.write_table(pa.table({"key": pa.array([4], pa.int64())}), split.path / DELETED_FILE)
    expected, combined = ConceptIndex.open(whole), ConceptIndex.open(split)
    for key in ("opacity", "pneumonia", "lobar_pneumonia", "pleural_effusion"):
        for exact in (False, True):
            got, want = combined.lookup(key, exact=exact), expected.lookup(key, exact=exact)
            for field in ("depths", "sentences", "contexts"):  # rows number each segment's own
                assert getattr(got, field).tolist() == getattr(want, field).tolist(), key
            assert ([combined.patterns[c].text for c in got.patterns]
                    == [expected.patterns[c].text for c in want.patterns]), key
            assert np.all(np.diff(got.rows[got.depths == 0]) > 0), key  # rows rise per depth
            loose = combined.lookup(key, exact=exact, ordered=False)  # segment by segment
            order = np.argsort(loose.depths, kind="stable")
            for field in ("rows", "depths", "sentences", "patterns", "contexts"):
                assert getattr(loose, field)[order].tolist() == getattr(got, field).tolist()


def test_segment_without_the_postings_fields_is_refused_with_the_remedy(tmp_path: Path) -> None:
    gen, folder = one_segment(tmp_path)
    write_findings(folder, [("r1#0", "pneumonia", "present", "right")])
    info = write_postings(folder, HIERARCHY)
    component = ConceptComponent()
    assert component.check(gen, None, info) == []
    (folder / "concepts" / "sentences.npy").unlink()  # as an index of an older clinsearch
    with pytest.raises(ClinsearchError, match="rebuild the index"):
        ConceptIndex.open(gen)
    assert component.check(gen, None, info) == [
        f"{folder / 'concepts' / 'sentences.npy'}: missing; rebuild the index",
        f"{gen.path / 'concepts'}: 0 postings under 0 keys, the manifest says 2 under 2"]


def test_check_finds_postings_that_disagree_with_the_findings(tmp_path: Path) -> None:
    gen, folder = one_segment(tmp_path)
    write_findings(folder, [("r1#0", "pneumonia", "present", ""),
                            ("r2#0", "opacity", "absent", "")])
    info = write_postings(folder, HIERARCHY)
    np.save(folder / "concepts" / "rows.npy", np.array([0, 1, 7], np.int32))
    problems = ConceptComponent().check(gen, None, info)
    assert problems == [f"{folder / 'concepts' / 'rows.npy'}: rows outside the 2 findings"]


def test_a_sentence_index_beyond_the_sentence_code_is_refused(tmp_path: Path) -> None:
    _, folder = one_segment(tmp_path)
    write_findings(folder, [("r1#0", "pneumonia", "present", ""),
                            (f"r1#{1 << SENTENCE_BITS}", "pneumonia", "present", "")])
    with pytest.raises(ClinsearchError, match="sentences or more"):
        write_postings(folder, HIERARCHY)


def test_a_hierarchy_deeper_than_the_stored_depth_is_refused(tmp_path: Path) -> None:
    chain = Hierarchy({f"c{i}": (f"c{i - 1}",) if i else () for i in range(200)})
    _, folder = one_segment(tmp_path)
    write_findings(folder, [("r1#0", "c199", "present", "")])
    with pytest.raises(ClinsearchError, match="at most 127 levels"):
        write_postings(folder, chain)
