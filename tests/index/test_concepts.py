"""Concept postings: every finding is posted under its concept and each ancestor, sorted by key."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.index.concept_postings import ConceptIndex, write_postings
from clinsearch.index.findings import FINDINGS_SCHEMA

HIERARCHY = Hierarchy({
    "opacity": (), "pneumonia": ("opacity",), "lobar_pneumonia": ("pneumonia",),
    "pleural_effusion": (),
})


def write_findings(folder: Path, rows: list[tuple[str, str, str, str]]) -> None:
    """findings.parquet with (sentence_id, concept, polarity, modifiers "a|b") rows."""
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(schema=FINDINGS_SCHEMA, mapping=[
        {"sentence_id": sid, "report_id": sid.split("#")[0], "visit_id": "v", "patient_id": "p",
         "concept": concept, "type": "disease", "polarity": pol,
         "pattern": "|".join(["disease", pol, concept.replace("_", " "), *filter(None, [mods])]),
         "start": 0, "end": 3, "text": concept,
         "modifiers": [{"category": "laterality", "value": m, "text": m, "start": 0, "end": 1}
                       for m in filter(None, [mods])]}
        for sid, concept, pol, mods in rows
    ])
    pq.write_table(table, folder / "findings.parquet")


def test_findings_are_posted_under_their_concept_and_every_ancestor(tmp_path: Path) -> None:
    rows = [("r1#0", "lobar_pneumonia", "present", "right"), ("r1#1", "pneumonia", "absent", ""),
            ("r2#0", "pleural_effusion", "present", ""), ("r3#0", "opacity", "present", ""),
            ("r3#1", "lobar_pneumonia", "uncertain", "")]
    write_findings(tmp_path, rows)
    info = write_postings(tmp_path, HIERARCHY)
    assert info == {"keys": 4, "postings": 2 * 3 + 1 * 2 + 1 + 1}
    index = ConceptIndex.open(tmp_path)
    opacity = index.lookup("opacity")
    assert opacity.rows.tolist() == [3, 1, 0, 4]  # by depth, then row
    assert opacity.depths.tolist() == [0, 1, 2, 2]
    assert index.lookup("opacity", exact=True).rows.tolist() == [3]
    assert index.lookup("pneumonia").rows.tolist() == [1, 0, 4]
    assert index.lookup("absent_concept").rows.tolist() == []
    assert index.sentence_ids[index.sentence_code[4]] == "r3#1"
    code = index.pattern_code[0]
    assert index.patterns[code] == "disease|present|lobar pneumonia|right"
    assert index.pattern_concept[code] == "lobar_pneumonia"
    assert index.pattern_polarity[code] == "present"
    assert index.pattern_modifiers[code] == ("right",)


def test_postings_follow_the_findings_table_when_it_changes(tmp_path: Path) -> None:
    write_findings(tmp_path, [("r1#0", "pneumonia", "present", "")])
    write_postings(tmp_path, HIERARCHY)
    write_findings(tmp_path, [("r2#0", "pleural_effusion", "present", ""),
                              ("r2#1", "pneumonia", "present", "")])
    write_postings(tmp_path, HIERARCHY)
    index = ConceptIndex.open(tmp_path)
    rows = index.lookup("pneumonia").rows
    assert [index.sentence_ids[index.sentence_code[r]] for r in rows] == ["r2#1"]


def test_lookup_returns_only_the_concepts_postings(tmp_path: Path) -> None:
    rows = [(f"r{i}#0", "pleural_effusion", "present", "") for i in range(20000)]
    rows.append(("rx#0", "pneumonia", "present", ""))
    write_findings(tmp_path, rows)
    write_postings(tmp_path, HIERARCHY)
    index = ConceptIndex.open(tmp_path)
    posting = index.lookup("pneumonia")
    assert posting.rows.tolist() == [20000]
    assert len(index.lookup("pleural_effusion").rows) == 20000
    assert len(index.lookup("opacity").rows) == 1
