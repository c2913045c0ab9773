"""The dense component: embeddings round trip, windows, ANN, segments (adds write one, deletes
only mark, merges rewrite without deleted vectors), in step with bm25."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import faiss
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import Report, SegmentedReport
from clinsearch.errors import ClinsearchError
from clinsearch.index.component import DELETED_FILE, Change, Generation
from clinsearch.index.dense import DenseComponent, DenseSearcher, merge_groups
from clinsearch.index.integrity import CoreRows, check_index
from clinsearch.models.encoder import load_encoder

from ..fresh_process import modules_loaded
from ..tiny_models import build_tiny_bert
from .test_bm25_segments import terms_in_files


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-encoder"))


def _config(model: Path, **options: object) -> IndexConfig:
    return IndexConfig(
        components=("bm25", "dense"), options={"dense": {"model": str(model), **options}}
    )


def _sentence_keys(index: Index) -> set[tuple[int, int]]:
    """(report key, sentence index) of every sentence in the core table."""
    table = index.generation.table("sentences", ["report_key", "index"])
    return set(zip(*(table.column(c).to_pylist() for c in ("report_key", "index")), strict=True))


def _dense_keys(index: Index) -> set[tuple[int, int]]:
    return _pairs(index.component("dense"))


def _pairs(searcher: DenseSearcher) -> set[tuple[int, int]]:
    """(report key, sentence index) of every live sentence with vectors."""
    return set(zip(searcher.report_keys.tolist(), searcher.sentence_indexes.tolist(), strict=True))


def _marked(folder: Path, keys: list[int]) -> Generation:
    """A new generation folder whose deletion marks are ``keys``, as ``Index.delete`` writes."""
    folder.mkdir()
    pq.write_table(pa.table({"key": pa.array(keys, pa.int64())}), folder / DELETED_FILE)
    return Generation(folder)


def _digests(folder: Path) -> dict[str, tuple[int, str]]:
    """(inode, SHA-256) of each file of a folder."""
    return {p.name: (p.stat().st_ino, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in folder.iterdir()}


def _top(searcher: DenseSearcher, query: np.ndarray, limit: int) -> list[tuple[int, int, float]]:
    """(report key, sentence index, score to 5 places) of the ``limit`` best sentences."""
    found = searcher.scorer(query)(limit)
    return list(zip(found.report_keys.tolist(), found.sentence_indexes.tolist(),
                    np.round(found.scores, 5).tolist(), strict=True))


def test_round_trip_stores_each_sentence_embedding(
    tmp_path: Path, corpus: list[SegmentedReport], tiny_model: Path
) -> None:
    index = Index.build(corpus, tmp_path / "idx", _config(tiny_model), progress=False)
    reopened = Index.open(tmp_path / "idx")
    searcher: DenseSearcher = reopened.component("dense")
    encoder = load_encoder(tiny_model)
    assert reopened.manifest.components["dense"] == {
        "model_path": str(tiny_model.resolve()),
        "fingerprint": encoder.fingerprint,
        "dim": 32,
        "vectors": 16,
        "sentences": 16,
        "ann": "exact",
        "segments": [{"number": 1, "vectors": 16, "ann": "exact", "nodes": 0}],
    }
    assert _dense_keys(reopened) == _sentence_keys(index)
    lookup, segment = reopened.lookup, searcher.segments[0]
    rows = lookup.sentence_rows(segment.report_keys, segment.sentence_indexes)
    expected = encoder.encode_passages([lookup.sentence_texts[r] for r in rows.tolist()]).vectors
    np.testing.assert_allclose(segment.vectors, expected, atol=1e-6)
    assert segment.vectors.dtype == np.float32


def test_long_sentence_gets_several_windows_and_scores_as_best(
    tmp_path: Path, make_reports: Callable[..., SegmentedReport], tiny_model: Path
) -> None:
    long = " ".join(["the lungs are clear ."] * 20) + " large right pneumothorax ."  # > 62 tokens
    reports = [make_reports("a", [long]), make_reports("b", ["no pleural effusion ."])]
    index = Index.build(reports, tmp_path / "idx", _config(tiny_model), progress=False)
    searcher: DenseSearcher = index.component("dense")
    assert index.manifest.components["dense"]["sentences"] == 2
    assert index.manifest.components["dense"]["vectors"] >= 3
    query = load_encoder(tiny_model).encode_queries(["large right pneumothorax ."])[0]
    segment = searcher.segments[0]
    windows = segment.vectors[segment.report_keys == 0] @ query
    assert searcher.sentence_scores(query)[0] == pytest.approx(windows.max())


def test_add_writes_one_segment_beside_the_linked_ones_with_a_fresh_builds_scores(
    tmp_path: Path,
    corpus: list[SegmentedReport],
    make_reports: Callable[..., SegmentedReport],
    tiny_model: Path,
) -> None:
    extra = [make_reports("r9", ["Tension pneumothorax.", "No effusion."]),
             make_reports("r10", ["Heart size is normal."])]
    fresh = Index.build([*corpus, *extra], tmp_path / "fresh", _config(tiny_model),
                        progress=False)
    index = Index.build(corpus, tmp_path / "idx", _config(tiny_model), progress=False)
    reader = Index.open(tmp_path / "idx")  # keeps the first generation on disk
    before = _digests(reader.generation.path / "dense")
    index.add(extra[:1], progress=False)
    index.add(extra[1:], progress=False)
    assert _digests(reader.generation.path / "dense") == before  # never written in place
    after = _digests(index.generation.path / "dense")
    assert after["vectors-000001.npy"] == before["vectors-000001.npy"]  # a link
    assert sorted(after) == ["meta.json", "rows-000001.parquet", "rows-000002.parquet",
                             "rows-000003.parquet", "vectors-000001.npy",
                             "vectors-000002.npy", "vectors-000003.npy"]
    assert _dense_keys(index) == _sentence_keys(index)
    grown, built = index.component("dense"), fresh.component("dense")
    query = load_encoder(tiny_model).encode_queries(["tension pneumothorax"])[0]
    want, got = _scores(built, query), _scores(grown, query)
    assert got.keys() == want.keys()
    np.testing.assert_allclose([got[k] for k in want], list(want.values()), atol=1e-5)
    assert _top(grown, query, 19) == _top(built, query, 19)


def test_delete_only_marks_and_merge_erases_the_deleted_vectors(
    tmp_path: Path,
    corpus: list[SegmentedReport],
    make_reports: Callable[..., SegmentedReport],
    tiny_model: Path,
) -> None:
    index = Index.build(corpus, tmp_path / "idx", _config(tiny_model), progress=False)
    index.add([make_reports("r9", ["Tension pneumothorax.", "No effusion."])], progress=False)
    component = DenseComponent({"model": str(tiny_model)})
    prev = index.generation
    keys = index.lookup.report_keys[index.lookup.report_ids.rows_of(["r1", "r9"])].tolist()
    change = Change(("r1", "r9"), tuple(keys))
    marked = _marked(tmp_path / "marked", keys)
    entry = component.delete(prev, marked, change)
    assert (entry["vectors"], entry["sentences"], len(entry["segments"])) == (14, 14, 2)
    linked = _digests(marked.path / "dense")
    assert {n: f for n, f in linked.items() if n != "meta.json"} == {
        n: f for n, f in _digests(prev.path / "dense").items() if n != "meta.json"}
    hidden = component.open(marked)
    assert _pairs(hidden) == _dense_keys(index) - {(k, i) for k in keys for i in (0, 1)}
    query = load_encoder(tiny_model).encode_queries(["tension pneumothorax"])[0]
    assert not set(keys) & {k for k, _, _ in _top(hidden, query, 20)}
    deleted_row = np.asarray(index.component("dense").segments[1].vectors[0]).tobytes()
    assert _holding(marked.path / "dense", deleted_row)  # positive control: still on disk

    merged = Generation(tmp_path / "merged")  # a merge clears the marks it erases
    entry = component.merge(marked, merged, change)
    assert entry["segments"] == [{"number": 3, "vectors": 14, "ann": "exact", "nodes": 0}]
    assert not _holding(merged.path / "dense", deleted_row)
    erased = component.open(merged)
    assert _top(erased, query, 20) == _top(hidden, query, 20)
    assert component.check(merged, _core(index, keys), entry) == []


def test_hnsw_per_segment_matches_exact_search_through_changes(
    tmp_path: Path,
    corpus: list[SegmentedReport],
    make_reports: Callable[..., SegmentedReport],
    tiny_model: Path,
) -> None:
    exact = Index.build(corpus, tmp_path / "exact", _config(tiny_model), progress=False)
    ann = Index.build(corpus, tmp_path / "ann", _config(tiny_model, exact_limit=0), progress=False)
    assert ann.manifest.components["dense"]["ann"] == "hnsw"
    assert (ann.generation.path / "dense" / "hnsw-000001.faiss").is_file()
    for query in ("pleural effusion", "clear lungs", "cardiomegaly"):
        # every sentence, so ties (common with a tiny random model) cannot change the set
        want = exact.search(query, method="dense", level="sentence", top=16)
        got = ann.search(query, method="dense", level="sentence", top=16)
        assert [round(h.score, 5) for h in got] == [round(h.score, 5) for h in want]
        assert {(h.id, round(h.score, 5)) for h in got} == {(h.id, round(h.score, 5)) for h in want}
    for index in (exact, ann):
        index.add([make_reports("r9", ["Tension pneumothorax.", "Small effusion."])],
                  progress=False)
    assert (ann.generation.path / "dense" / "hnsw-000002.faiss").is_file()
    query = load_encoder(tiny_model).encode_queries(["tension pneumothorax ."])[0]
    merged = ann.component("dense")
    assert len(merged.segments) == 2 and merged.scorer(query)(18).exhausted
    assert _top(merged, query, 18) == _top(exact.component("dense"), query, 18)
    for segment in merged.segments:  # efSearch goes with each search: threads share the index
        assert segment.ann.hnsw.efSearch == faiss.read_index(str(segment.ann_path)).hnsw.efSearch
    component = DenseComponent({"model": str(tiny_model), "exact_limit": 0})
    key = int(ann.lookup.report_keys[ann.lookup.report_ids.rows_of(["r2"])[0]])
    marked = _marked(tmp_path / "marked", [key])
    component.delete(ann.generation, marked, Change(("r2",), (key,)))
    found = _top(component.open(marked), query, 20)
    assert len(found) == 16 and key not in {k for k, _, _ in found}
    component.merge(marked, Generation(tmp_path / "merged"), Change(("r2",), (key,)))
    assert _top(component.open(Generation(tmp_path / "merged")), query, 20) == found


def test_an_hnsw_holds_each_repeated_sentence_once_and_finds_all_its_reports(
    tmp_path: Path, make_reports: Callable[..., SegmentedReport], tiny_model: Path
) -> None:
    repeated = ["No pneumothorax.", "Heart size is normal."]
    corpus = [make_reports(f"r{n}", [*repeated, f"{side} nodule in the {lobe} lobe."])
              for n, (side, lobe) in enumerate(
                  [("Small", "upper"), ("Large", "lower"), ("Calcified", "middle")] * 2)]
    exact = Index.build(corpus, tmp_path / "exact", _config(tiny_model), progress=False)
    ann = Index.build(corpus, tmp_path / "ann", _config(tiny_model, exact_limit=0),
                      progress=False)
    segment = ann.component("dense").segments[0]
    distinct = len(np.unique(np.asarray(segment.vectors), axis=0))
    assert segment.nodes == segment.ann.ntotal == distinct < len(segment.vectors) == 18
    query = load_encoder(tiny_model).encode_queries(["no pneumothorax ."])[0]
    for limit in (1, 4, 7, 18):  # a cut inside a node's rows takes its first reports
        assert _top(ann.component("dense"), query, limit) == _top(
            exact.component("dense"), query, limit)
    for index in (exact, ann):  # a node's deleted rows are left out, its other rows stay
        index.delete(["r0", "r1"])
    assert _top(ann.component("dense"), query, 12) == _top(exact.component("dense"), query, 12)
    assert len(_top(ann.component("dense"), query, 12)) == 12


def test_an_hnsw_written_one_node_per_row_is_still_searched(
    tmp_path: Path, corpus: list[SegmentedReport], tiny_model: Path
) -> None:
    """Segments written before graphs held distinct vectors have a node per row (``nodes`` 0)."""
    ann = Index.build(corpus, tmp_path / "ann", _config(tiny_model, exact_limit=0),
                      progress=False)
    query = load_encoder(tiny_model).encode_queries(["pleural effusion ."])[0]
    want = _top(ann.component("dense"), query, 16)
    folder = ann.generation.path / "dense"
    meta = json.loads((folder / "meta.json").read_text())
    vectors = np.load(folder / "vectors-000001.npy")
    graph = faiss.IndexHNSWFlat(vectors.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    graph.add(vectors)
    faiss.write_index(graph, str(folder / "hnsw-000001.faiss"))
    for name in ("node-rows-000001.npy", "node-starts-000001.npy"):
        (folder / name).unlink()
    del meta["segments"][0]["nodes"]
    (folder / "meta.json").write_text(json.dumps(meta))
    assert _top(DenseSearcher(folder), query, 16) == want


def test_index_delete_marks_and_optimize_erases_vectors_and_terms(
    tmp_path: Path,
    corpus: list[SegmentedReport],
    make_reports: Callable[..., SegmentedReport],
    tiny_model: Path,
) -> None:
    config = IndexConfig(components=("bm25", "dense"), options={
        "dense": {"model": str(tiny_model)},
        "bm25": {"merge_below_sentences": 0, "max_deleted_fraction": 1.0},  # marks only
    })
    unique = make_reports("rz", ["Zanzibarite nodule in the left apex.", "No effusion."])
    index = Index.build([*corpus, unique], tmp_path / "idx", config, progress=False)
    fresh = Index.build(corpus[1:], tmp_path / "fresh", config, progress=False)
    key = int(index.lookup.report_keys[index.lookup.report_ids.rows_of(["rz"])[0]])
    segment = index.component("dense").segments[0]
    row = np.flatnonzero((segment.report_keys == key) & (segment.sentence_indexes == 0))[0]
    vector = np.asarray(segment.vectors[row]).tobytes()  # its unique sentence's
    index.delete(["rz", "r1"])
    dense = index.generation.path / "dense"
    assert _holding(dense, vector) and terms_in_files(index, "zanzibar")  # marks: data remains
    assert _dense_keys(index) == _sentence_keys(index) and key not in index.component(
        "dense").report_keys
    components = index.manifest.components
    assert components["dense"]["sentences"] == components["bm25"]["documents"]["sentences"]
    assert check_index(index.path)[1] == []
    queries = ("zanzibarite nodule", "pleural effusion", "heart size")
    for method in ("bm25", "dense"):
        hits = {h.report_id for q in queries for h in index.search(q, method=method, top=20)}
        assert hits and hits.isdisjoint({"rz", "r1"})

    assert index.optimize() == 1
    assert not _holding(index.generation.path / "dense", vector)
    assert not terms_in_files(index, "zanzibar")
    assert check_index(index.path)[1] == []
    for query in queries:  # exact search: a fresh build's answers (ids, not keys, agree)
        for method in ("bm25", "bm25:whole_report=true", "dense"):
            want = [(h.id, round(h.score, 5)) for h in fresh.search(query, method=method, top=10)]
            got = [(h.id, round(h.score, 5)) for h in index.search(query, method=method, top=10)]
            assert (got == want) if method != "dense" else (set(got) == set(want))


def _scores(searcher: DenseSearcher, query: np.ndarray) -> dict[tuple[int, int], float]:
    """The exact score of each live sentence, by (report key, sentence index)."""
    pairs = zip(searcher.report_keys.tolist(), searcher.sentence_indexes.tolist(), strict=True)
    return dict(zip(pairs, searcher.sentence_scores(query).tolist(), strict=True))


def _holding(folder: Path, data: bytes) -> list[str]:
    """The files under ``folder`` that contain ``data``."""
    return [p.name for p in folder.rglob("*") if p.is_file() and data in p.read_bytes()]


def _core(index: Index, deleted: list[int]) -> CoreRows:
    """The core keys of ``index`` without the ``deleted`` reports."""
    core = CoreRows.read(index.generation)
    live = ~np.isin(core.sentence_keys, deleted)
    return CoreRows(np.setdiff1d(core.report_keys, deleted), core.sentence_keys[live],
                    core.sentence_indexes[live])


def test_searching_with_another_model_is_a_clear_error(
    tmp_path: Path, corpus: list[SegmentedReport], tiny_model: Path
) -> None:
    index = Index.build(corpus, tmp_path / "idx", _config(tiny_model), progress=False)
    other = build_tiny_bert(tmp_path / "other", seed=1)
    with pytest.raises(ClinsearchError, match=r"built with model .*not .*other.*rebuild"):
        index.search("effusion", method="dense", model=str(other))


def test_dense_search_without_dense_component_is_a_clear_error(
    tmp_path: Path, corpus: list[SegmentedReport]
) -> None:
    index = Index.build(corpus, tmp_path / "idx", progress=False)
    with pytest.raises(ClinsearchError, match="no 'dense' component"):
        index.search("effusion", method="dense")


def test_add_reuses_the_vectors_of_texts_the_index_already_holds(
    tmp_path: Path, make_reports: Callable[..., SegmentedReport], tiny_model: Path
) -> None:
    long = " ".join(["the lungs are clear ."] * 20)  # several windows
    index = Index.build([make_reports("a", ["no pleural effusion .", long])], tmp_path / "idx",
                        _config(tiny_model), progress=False)
    index.add([make_reports("b", [long, "mild cardiomegaly .", "no pleural effusion ."])],
              progress=False)
    old, new = index.component("dense").segments
    assert len(old.vectors) >= 3 and len(new.vectors) == len(old.vectors) + 1
    copied = new.vectors[new.sentence_indexes != 1]  # the long text, then the short one
    np.testing.assert_array_equal(copied, np.vstack([old.vectors[1:], old.vectors[:1]]))
    assert check_index(tmp_path / "idx")[1] == []


def test_an_add_loads_the_encoder_only_when_a_text_has_no_vectors_yet(
    tmp_path: Path, tiny_model: Path
) -> None:
    texts = ("No pleural effusion. Mild cardiomegaly.", "Mild cardiomegaly.",
             "Small left pneumothorax.")
    Index.build([Report("a", texts[0])], tmp_path / "idx", _config(tiny_model), progress=False)
    add = ("from clinsearch import Index\nfrom clinsearch.corpus.model import Report\n"
           f"Index.open({str(tmp_path / 'idx')!r}).add([Report({{}}, {{}})], progress=False)\n")
    assert modules_loaded(add.format("'b'", repr(texts[1])), ["torch"]) == [False]
    assert modules_loaded(add.format("'c'", repr(texts[2])), ["torch"]) == [True]
    with Index.open(tmp_path / "idx") as index:
        segments = index.component("dense").segments
        fresh = load_encoder(tiny_model).encode_passages(["Small left pneumothorax."]).vectors
    np.testing.assert_allclose(segments[-1].vectors, fresh, atol=1e-6)
    np.testing.assert_array_equal(segments[1].vectors, segments[0].vectors[1:])


def test_embed_sentences_encodes_only_texts_without_known_vectors(tiny_model: Path) -> None:
    from clinsearch.index.dense import embed_sentences

    encoder = load_encoder(tiny_model)
    table = pa.table({"report_key": [0, 0, 1], "index": [0, 1, 0],
                      "text": ["no pleural effusion .", "mild cardiomegaly .",
                               "no pleural effusion ."]})
    marker = np.full((2, 32), 0.5, np.float32)  # two windows, unlike anything the encoder gives
    asked: list[list[str]] = []

    def known(texts: list[str]) -> dict[str, np.ndarray]:
        asked.append(texts)
        return {"no pleural effusion .": marker}

    keys, indexes, vectors = embed_sentences(table, encoder, 8, known=known)
    assert asked == [["no pleural effusion .", "mild cardiomegaly ."]]
    assert keys.tolist() == [0, 0, 0, 1, 1] and indexes.tolist() == [0, 0, 1, 0, 0]
    np.testing.assert_array_equal(vectors[[0, 1, 3, 4]], np.vstack([marker, marker]))
    np.testing.assert_allclose(vectors[2], encoder.encode_queries(["mild cardiomegaly ."])[0],
                               atol=1e-6)


def _bounded(model: Path, **options: object) -> IndexConfig:
    """Core segments of two reports (so sentences stream in small batches) and dense segments
    of about ``segment_vectors`` rows."""
    return IndexConfig(components=("bm25", "dense"), max_segment_reports=2,
                       options={"dense": {"model": str(model), **options}})


def test_a_build_and_an_add_write_bounded_segments_that_answer_as_one(
    tmp_path: Path,
    corpus: list[SegmentedReport],
    make_reports: Callable[..., SegmentedReport],
    tiny_model: Path,
) -> None:
    extra = [make_reports(f"x{i}", ["Tension pneumothorax.", f"Effusion {i}."]) for i in range(4)]
    whole = Index.build([*corpus, *extra], tmp_path / "whole", _config(tiny_model),
                        progress=False)
    for name, options in (("exact", {}), ("hnsw", {"exact_limit": 0})):
        index = Index.build(corpus, tmp_path / name, _bounded(tiny_model, segment_vectors=5,
                                                               **options), progress=False)
        index.add(extra, progress=False)
        segments = index.manifest.components["dense"]["segments"]
        # a segment gathers whole sentence batches (a core segment's, or an add's) up to 5 rows
        assert len(segments) >= 3 and all(s["vectors"] <= 8 for s in segments), segments
        assert _dense_keys(index) == _sentence_keys(index)
        query = load_encoder(tiny_model).encode_queries(["tension pneumothorax"])[0]
        assert _top(index.component("dense"), query, 24) == _top(whole.component("dense"),
                                                                   query, 24), name
        assert check_index(index.path)[1] == []


def test_a_merge_rewrites_only_the_segments_with_deleted_rows_within_the_bound(
    tmp_path: Path, corpus: list[SegmentedReport], tiny_model: Path
) -> None:
    index = Index.build(corpus, tmp_path / "idx", _bounded(tiny_model, segment_vectors=5),
                        progress=False)
    before = [s["number"] for s in index.manifest.components["dense"]["segments"]]
    index.delete(["r1"])
    index.optimize()
    after = index.manifest.components["dense"]["segments"]
    assert [s["number"] for s in after][:-1] == before[1:]  # r1's segment alone was rewritten
    assert after[-1]["number"] == max(before) + 1
    kept = [r for r in corpus if r.report.id != "r1"]
    fresh = Index.build(kept, tmp_path / "fresh", _config(tiny_model), progress=False)
    want = fresh.search("pleural effusion", method="dense", level="sentence", top=20)
    got = index.search("pleural effusion", method="dense", level="sentence", top=20)
    assert {(h.id, round(h.score, 5)) for h in got} == {(h.id, round(h.score, 5)) for h in want}
    assert len(got) == 14 and check_index(index.path)[1] == []


@pytest.mark.parametrize(("live", "dirty", "crowded", "groups"), [
    ([5, 5, 5], [False, True, False], False, [[1]]),  # only the one with deleted rows
    ([5, 5, 5], [True, True, False], False, [[0, 1]]),  # packed while within the bound
    ([6, 5, 5], [True, True, False], False, [[0], [1]]),  # 11 rows would pass the bound
    ([10, 2, 3, 10, 4], [False] * 5, True, [[1, 2, 4]]),  # crowded: the small ones packed
    ([10, 2, 9, 10], [False] * 4, True, []),  # a small one alone is left as it is
    ([10, 10], [False, False], True, []),  # full segments are never merged
])
def test_merge_groups_stay_within_the_bound(
        live: list[int], dirty: list[bool], crowded: bool, groups: list[list[int]]) -> None:
    assert merge_groups(live, dirty, crowded, limit=10) == groups
