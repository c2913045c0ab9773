"""Index round trip, rebuild, add and delete, and refusals to open or overwrite the wrong thing."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import SegmentedReport
from clinsearch.errors import ClinsearchError, InputError

from .conftest import CORPUS, segmented


def test_round_trip_tables_and_manifest(built: Index, corpus: list[SegmentedReport]) -> None:
    opened = Index.open(built.path)
    assert opened.manifest.to_dict() == built.manifest.to_dict()
    counts = opened.manifest.counts
    assert (counts.reports, counts.sentences, counts.visits, counts.patients) == (8, 16, 7, 5)
    reports = opened.generation.table("reports").to_pylist()
    assert [r["id"] for r in reports] == [s.report.id for s in corpus]
    assert reports[2]["patient_id"] == "p2" and reports[2]["source"] == "test.csv:3"
    sentences = opened.generation.table("sentences").to_pylist()
    by_report = {r["id"]: r["text"] for r in reports}
    for row in sentences:
        assert by_report[row["report_id"]][row["start"] : row["end"]] == row["text"]
    assert [s["id"] for s in sentences] == [s.id for seg in corpus for s in seg.sentences]


def test_layout_and_manifest_fields(built: Index) -> None:
    root = built.path
    assert (root / "CURRENT").read_text().strip() == "gen-000001"
    gen = root / "gen-000001"
    assert {p.name for p in gen.iterdir()} >= {"manifest.json", "segments", "lexical"}
    assert {p.name for p in (gen / "segments" / "s000001").iterdir()} == {
        "reports.parquet", "sentences.parquet", "sentence_counts.npy", "findings.parquet",
        "concepts"}
    assert {p.name for p in (gen / "lexical").iterdir()} == {"sentences", "reports"}
    manifest = built.manifest.to_dict()
    assert manifest["format"] == "clinsearch-index" and manifest["format_version"] == 2
    assert manifest["config"]["components"] == ["lexical", "findings", "concepts"]
    assert manifest["components"]["lexical"]["documents"] == {"sentences": 16, "reports": 8}
    assert "no" not in manifest["components"]["lexical"]["analyzer"]["stopwords"]
    assert manifest["created"].endswith("+00:00")


def test_rebuild_replaces_and_removes_old_generation(
    built: Index, corpus: list[SegmentedReport]
) -> None:
    rebuilt = Index.build(corpus[:3], built.path, progress=False)
    assert rebuilt.manifest.generation == 2 and rebuilt.manifest.counts.reports == 3
    # the open reader still holds generation 1: it is kept, and still searchable
    assert (built.path / "gen-000001").is_dir()
    assert [h.id for h in built.search("mediastinal", method="bm25")] == ["r5"]
    built.close()
    rebuilt.close()
    Index.build(corpus[:2], built.path, progress=False)
    assert sorted(p.name for p in built.path.iterdir()) == [".lock", "CURRENT", "gen-000003"]


def test_refuses_non_index_folder(tmp_path: Path, corpus: list[SegmentedReport]) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ClinsearchError, match="not empty and is not a clinsearch index"):
        Index.build(corpus, tmp_path, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_builds_into_empty_existing_folder(tmp_path: Path, corpus: list[SegmentedReport]) -> None:
    assert Index.build(corpus, tmp_path, progress=False).manifest.counts.reports == 8


def test_open_errors(tmp_path: Path, built: Index) -> None:
    with pytest.raises(ClinsearchError, match="no such index directory"):
        Index.open(tmp_path / "missing")
    with pytest.raises(ClinsearchError, match="not a clinsearch index"):
        Index.open(tmp_path)
    (built.path / "CURRENT").write_text("gen-000009\n")
    with pytest.raises(ClinsearchError, match="which is missing"):
        Index.open(built.path)


def test_empty_input_and_duplicate_ids(tmp_path: Path, corpus: list[SegmentedReport]) -> None:
    with pytest.raises(ClinsearchError, match="no reports to index"):
        Index.build([], tmp_path / "empty", progress=False)
    assert not (tmp_path / "empty").exists()
    with pytest.raises(InputError, match=r"test\.csv:1: field 'id': duplicate report id 'r1'"):
        Index.build([*corpus, corpus[0]], tmp_path / "dup", progress=False)
    assert not (tmp_path / "dup").exists()


def test_add_changes_counts_and_search(built: Index) -> None:
    assert [h.id for h in built.search("apical", level="report", method="bm25")] == []
    added = built.add(
        [segmented("r9", ["Tiny right apical pneumothorax."], "p1", "v8")], progress=False
    )
    assert added == 1
    counts = built.manifest.counts
    assert (counts.reports, counts.sentences, counts.visits, counts.patients) == (9, 17, 8, 5)
    assert built.manifest.generation == 2
    hits = built.search("apical", level="patient", method="bm25")
    assert [(h.id, h.report_id, h.visit_id, h.sentence_id) for h in hits] == [
        ("p1", "r9", "v8", "r9#0")
    ]
    assert Index.open(built.path).search("apical", method="bm25")[0].id == "r9"


def test_add_rejects_known_id(built: Index) -> None:
    with pytest.raises(InputError, match="duplicate report id 'r2'"):
        built.add([segmented("r2", ["Again."])], progress=False)
    assert built.manifest.generation == 1
    assert Index.open(built.path).manifest.counts.reports == 8


def test_delete_changes_counts_and_every_level(built: Index) -> None:
    assert {h.patient_id for h in built.search("pneumothorax", level="patient", method="bm25")} == {
        "p1",
        "p3",
    }
    assert built.delete(["r5", "r7"]) == 2
    counts = built.manifest.counts
    assert (counts.reports, counts.sentences, counts.visits, counts.patients) == (6, 12, 5, 4)
    assert [h.id for h in built.search("pneumothorax", level="patient", method="bm25")] == ["p1"]
    assert [h.id for h in built.search("pneumothorax", level="sentence", method="bm25")] == ["r1#1"]
    assert [h.id for h in built.search("mediastinal", level="visit", method="bm25")] == []
    # the other report of patient p5 still answers for p5
    assert [
        h.id for h in built.search("stable cardiomegaly", level="patient", top=1, method="bm25")
    ] == ["p5"]
    reopened = Index.open(built.path)
    assert reopened.manifest.counts == counts
    assert reopened.component("bm25").num_docs("sentences") == 12


def test_delete_then_add_same_id(built: Index) -> None:
    built.delete(["r1"])
    built.add([segmented("r1", ["New text about a nodule."], "p1", "v1")], progress=False)
    assert [h.id for h in built.search("nodule", method="bm25")] == ["r1"]
    assert [h.id for h in built.search("pneumothorax", method="bm25")] == ["r5"]


def test_delete_unknown_ids(built: Index) -> None:
    with pytest.raises(InputError, match=r"2 id\(s\) not in the index: 'x1', 'x2'"):
        built.delete(["r1", "x1", "x2"])
    with pytest.raises(ClinsearchError, match="no report ids"):
        built.delete([])
    assert Index.open(built.path).manifest.counts.reports == 8


def test_stale_handle_refuses_to_write(built: Index) -> None:
    other = Index.open(built.path)
    other.delete(["r1"])
    with pytest.raises(ClinsearchError, match="changed since it was opened"):
        built.delete(["r2"])
    assert Index.open(built.path).manifest.counts.reports == 7


def test_unknown_component_in_config() -> None:
    with pytest.raises(ClinsearchError, match="unknown index component 'nope'"):
        IndexConfig(components=("bm25", "nope"))


def test_analyzer_options_are_kept(tmp_path: Path, corpus: list[SegmentedReport]) -> None:
    config = IndexConfig(options={"bm25": {"stemmer": None, "stopwords": ["no"]}})
    index = Index.build(corpus, tmp_path / "plain", config=config, progress=False)
    assert Index.open(index.path).component("bm25").terms("No effusions") == ["effusions"]
    assert [h.id for h in index.search("effusions", method="bm25")] == [
        "r6"
    ]  # not stemmed: only the plural


def test_delete_everything_then_add(built: Index) -> None:
    built.delete([seg_id for seg_id, *_ in CORPUS])
    assert (
        built.manifest.counts.reports == 0
        and built.search("pneumothorax", level="patient", method="bm25") == []
    )
    built.add([segmented("z1", ["Pneumothorax."])], progress=False)
    assert [h.id for h in built.search("pneumothorax", method="bm25")] == ["z1"]


def test_reader_keeps_its_generation_until_reopen(built: Index) -> None:
    reader = Index.open(built.path)
    built.delete(["r1"])  # generation 2 is live; ``reader`` still leases generation 1
    assert (built.path / "gen-000001").is_dir()
    assert {h.id for h in reader.search("pneumothorax", method="bm25")} == {"r1", "r5"}
    assert [h.id for h in reader.reopen().search("pneumothorax", method="bm25")] == ["r5"]
    built.delete(["r2"])  # generation 1 is free now; ``reader`` holds generation 2
    assert sorted(p.name for p in built.path.glob("gen-*")) == ["gen-000002", "gen-000003"]
    reader.close()
    built.delete(["r3"])
    assert sorted(p.name for p in built.path.glob("gen-*")) == ["gen-000004"]
