"""The bm25 component in segments: adds write new tantivy segments and give the BM25 ranking
of a fresh build, generations share files that never change, deletes mark, rebuilds erase."""

from __future__ import annotations

import hashlib
import json
from itertools import pairwise
from pathlib import Path

import pytest

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import SegmentedReport
from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path
from clinsearch.corpus.synthetic import sentence_pool, synthetic_reports
from clinsearch.index.bm25 import GRANULARITIES, ORDER_FILE, BM25Component, BM25Searcher
from clinsearch.index.index_store import split_into_sentences
from clinsearch.index.integrity import CoreRows, check_index

from .conftest import segmented

MARKS_ONLY = {"merge_below_sentences": 0, "max_deleted_fraction": 1.0}
UNIQUE = "Zanzibarite nodule in the left apex."  # "zanzibarit" is in no other report


@pytest.fixture(scope="module")
def sample() -> list[SegmentedReport]:
    """120 reports recombined from the bundled sample's sentences (many exact BM25 ties)."""
    pool = sentence_pool(read_reports(sample_reports_path(), SAMPLE_FORMAT))
    return split_into_sentences(list(synthetic_reports(pool, 120, seed=11)))


@pytest.fixture(scope="module")
def queries(sample: list[SegmentedReport]) -> list[str]:
    """Single words and pairs of words of the sample's sentences."""
    words = sorted({w.strip(".,;:").lower() for r in sample for s in r.sentences
                    for w in s.text.split() if len(w) > 3 and w.strip(".,;:").isalpha()})
    return words[::3] + [f"{a} {b}" for a, b in zip(words[::7], words[3::7], strict=False)]


def _config(**options: object) -> IndexConfig:
    return IndexConfig(components=("bm25",), options={"bm25": options})


def _top10(index: Index, queries: list[str]) -> list[list[tuple[str, float]]]:
    """BM25 top 10 of each query, sentences and whole reports: (hit id, score) in rank order
    (report keys differ between an index with deletions and a fresh build: ids do not)."""
    methods = (("bm25", "sentence"), ("bm25:whole_report=true", "report"))
    return [[(h.id, h.score) for h in index.search(q, method=m, level=level, top=10)]
            for m, level in methods for q in queries]


def _tantivy_segments(index: Index, granularity: str) -> int:
    meta = index.generation.path / "lexical" / granularity / "meta.json"
    return len(json.loads(meta.read_text())["segments"])


def _files(folder: Path) -> dict[str, tuple[int, str]]:
    """(inode, SHA-256) of every file under ``folder`` but tantivy's empty lock files."""
    return {
        str(p.relative_to(folder)): (p.stat().st_ino, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in folder.rglob("*") if p.is_file() and not p.name.endswith(".lock")
    }


def test_adds_give_the_bm25_top10_of_a_fresh_build(
    tmp_path: Path, sample: list[SegmentedReport], queries: list[str]
) -> None:
    fresh = Index.build(sample, tmp_path / "fresh", _config(), progress=False)
    steps = Index.build(sample[:40], tmp_path / "steps", _config(), progress=False)
    for start in (40, 70, 100):
        steps.add(sample[start:start + 30 if start < 100 else None], progress=False)
    assert _tantivy_segments(fresh, "sentences") == 1
    assert _tantivy_segments(steps, "sentences") == 4  # one per write: merged in the background
    want, got = _top10(fresh, queries), _top10(steps, queries)
    assert sum(len({s for _, s in r}) < len(r) for r in want) > 20  # ties to order
    assert want == got
    for query in queries[:20]:
        a = fresh.search(query, method="bm25", level="report", top=10)
        b = steps.search(query, method="bm25", level="report", top=10)
        assert [(h.id, h.score) for h in a] == [(h.id, h.score) for h in b]


def test_an_add_links_the_previous_files_and_never_changes_them(
    tmp_path: Path, sample: list[SegmentedReport], queries: list[str]
) -> None:
    root = tmp_path / "idx"
    Index.build(sample[:60], root, _config(), progress=False).close()
    reader = Index.open(root)  # holds the generation: the writer must keep it
    before_answers = _top10(reader, queries)
    old = reader.generation.path / "lexical"
    before = _files(old)
    writer = Index.open(root)
    writer.add(sample[60:], progress=False)
    added = _files(writer.generation.path / "lexical")
    shared = [name for name, file in added.items() if before.get(name) == file]
    assert any(name.endswith(".term") for name in shared)  # segments are links, not copies
    writer.delete([sample[0].report.id])
    assert _files(old) == before
    assert _top10(reader, queries) == before_answers


def test_delete_marks_hide_documents_and_drift_bm25_until_rebuilt(
    tmp_path: Path, sample: list[SegmentedReport], queries: list[str]
) -> None:
    gone = [r.report.id for r in sample[::4]]
    kept = [r for r in sample if r.report.id not in gone]
    fresh = Index.build(kept, tmp_path / "fresh", _config(), progress=False)
    marked = Index.build(sample, tmp_path / "marked", _config(**MARKS_ONLY), progress=False)
    marked.delete(gone)
    entry = marked.manifest.components["bm25"]
    sentences = sum(len(r.sentences) for r in kept)
    assert entry["documents"] == {"sentences": sentences, "reports": len(kept)}
    assert entry["deleted"] == {"sentences": sum(len(r.sentences) for r in sample) - sentences,
                                "reports": len(gone)}
    assert any(p.suffix == ".del" for p in (marked.generation.path / "lexical").rglob("*"))
    assert check_index(marked.path)[1] == []
    hits = {h.report_id for q in queries for h in marked.search(q, method="bm25", top=50)}
    assert hits and hits.isdisjoint(gone)
    # deleted documents still count in BM25 statistics: scores differ from a fresh build's
    ids = [(h.report_id, h.score) for h in fresh.search("pleural effusion", method="bm25")]
    drifted = [(h.report_id, h.score) for h in marked.search("pleural effusion", method="bm25")]
    assert [i for i, _ in ids] == [i for i, _ in drifted] and ids != drifted
    # crossing max_deleted_fraction rebuilds: exactly a fresh build's answers
    rebuilt = Index.build(sample, tmp_path / "rebuilt", _config(merge_below_sentences=0,
                                                                 max_deleted_fraction=0.2),
                          progress=False)
    rebuilt.delete(gone[:3])
    assert rebuilt.manifest.components["bm25"]["deleted"]["sentences"] > 0  # 3 of 120: marks
    rebuilt.delete(gone[3:])
    assert rebuilt.manifest.components["bm25"]["deleted"] == {"sentences": 0, "reports": 0}
    assert _top10(rebuilt, queries) == _top10(fresh, queries)


def test_a_small_index_deletes_exactly_and_keeps_no_deleted_term(
    tmp_path: Path, corpus: list[SegmentedReport]
) -> None:
    extra = segmented("rz", [UNIQUE, "Heart size is normal."])
    marked = Index.build([*corpus, extra], tmp_path / "marked", _config(**MARKS_ONLY),
                         progress=False)
    small = Index.build([*corpus, extra], tmp_path / "small", _config(), progress=False)
    fresh = Index.build(corpus, tmp_path / "fresh", _config(), progress=False)
    for index in (marked, small):
        assert terms_in_files(index, "zanzibar")  # positive control: the term is in the files
        index.delete(["rz"])
    assert terms_in_files(marked, "zanzibar")  # marks only: the term stays in the term dictionaries
    assert not terms_in_files(small, "zanzibar")  # rebuilt (small index): gone from every segment
    assert _top10(small, ["normal heart", "effusion"]) == _top10(fresh, ["normal heart",
                                                                         "effusion"])


def terms_in_files(index: Index, prefix: str) -> list[tuple[str, int]]:
    """Terms starting with ``prefix`` in the term dictionary of every tantivy segment file of
    the index (deleted documents' terms included until a rebuild)."""
    bm25: BM25Searcher = index.component("bm25")
    return [t for g in GRANULARITIES for t in bm25._searchers[g].terms_with_prefix("text",
                                                                                      prefix)]


def test_writes_keep_the_index_key_ordered_and_tied_hits_come_in_key_order(
    tmp_path: Path, sample: list[SegmentedReport], queries: list[str]
) -> None:
    steps = Index.build(sample[:40], tmp_path / "steps", _config(), progress=False)
    for start in (40, 70, 100):
        steps.add(sample[start:start + 30 if start < 100 else None], progress=False)
    bm25: BM25Searcher = steps.component("bm25")
    assert bm25._ordered_prefix == {"sentences": 4, "reports": 4}  # every segment
    for granularity in GRANULARITIES:
        folder = steps.generation.path / "lexical" / granularity
        recorded = json.loads((folder / ORDER_FILE).read_text())["segments"]
        listed = [recorded[s["segment_id"]] for s in json.loads((folder / "meta.json")
                                                               .read_text())["segments"]]
        assert all(r["in_order"] for r in listed) and len(listed) == 4
        assert all(a["last"] < b["first"] for a, b in pairwise(listed))
    fast = _top10(steps, queries)
    for prefix in range(4):  # ties at the cut beyond the prefix: fetched and sorted by keys
        bm25._ordered_prefix = {g: prefix for g in GRANULARITIES}
        assert _top10(steps, queries) == fast


def test_a_segment_out_of_key_order_falls_back_to_sorting_the_ties(
    tmp_path: Path, sample: list[SegmentedReport], queries: list[str]
) -> None:
    fresh = Index.build(sample, tmp_path / "fresh", _config(), progress=False)
    steps = Index.build(sample[:20], tmp_path / "steps", _config(), progress=False)
    for start in range(20, 120, 10):  # tantivy merges 8 small segments, by size not by keys
        steps.add(sample[start:start + 10], progress=False)
    folder = steps.generation.path / "lexical" / "sentences"
    recorded = json.loads((folder / ORDER_FILE).read_text())["segments"].values()
    assert not all(r["in_order"] for r in recorded)
    assert steps.component("bm25")._ordered_prefix["sentences"] < len(recorded)
    assert _top10(steps, queries) == _top10(fresh, queries)
    assert check_index(steps.path)[1] == []


def test_check_finds_a_key_order_record_that_is_not_the_segments(
    tmp_path: Path, sample: list[SegmentedReport]
) -> None:
    index = Index.build(sample[:30], tmp_path / "idx", _config(), progress=False)
    index.add(sample[30:60], progress=False)
    path = index.generation.path / "lexical" / "reports" / ORDER_FILE
    record = json.loads(path.read_text())
    first = next(iter(record["segments"]))
    record["segments"][first] = {"first": [0, 0], "last": [10**6, 0], "in_order": True}
    path.unlink()  # never write in place: earlier generations may link the file
    path.write_text(json.dumps(record))
    assert any(ORDER_FILE in p for p in check_index(index.path)[1])  # its checksum first
    gen = index.generation
    entry = index.manifest.components["bm25"]
    problems = BM25Component({}).check(gen, CoreRows.read(gen), entry)
    assert [p for p in problems if f"{first} has key range" in p]
