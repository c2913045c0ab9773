"""The dense component: embeddings round trip, windows, ANN, add/delete in step with lexical."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import SegmentedReport
from clinsearch.errors import ClinsearchError
from clinsearch.index.dense import DenseSearcher
from clinsearch.models.encoder import load_encoder
from clinsearch.models.tiny import build_tiny_bert


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-encoder"))


def _config(model: Path, **options: object) -> IndexConfig:
    return IndexConfig(
        components=("lexical", "dense"), options={"dense": {"model": str(model), **options}}
    )


def _sentence_keys(index: Index) -> set[tuple[int, int]]:
    """(report key, sentence index) of every sentence in the core table."""
    table = index.generation.table("sentences", ["report_key", "index"])
    return set(zip(*(table.column(c).to_pylist() for c in ("report_key", "index")), strict=True))


def _dense_keys(index: Index) -> set[tuple[int, int]]:
    searcher: DenseSearcher = index.component("dense")
    pairs = zip(searcher.report_keys.tolist(), searcher.sentence_indexes.tolist(), strict=True)
    return set(pairs)


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
    }
    assert _dense_keys(reopened) == _sentence_keys(index)
    store = reopened.store
    rows = store.sentence_rows(searcher.report_keys, searcher.sentence_indexes)
    expected = encoder.encode_passages([store.sentence_texts[r] for r in rows.tolist()]).vectors
    np.testing.assert_allclose(searcher.vectors, expected, atol=1e-6)
    assert searcher.vectors.dtype == np.float32


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
    windows = searcher.vectors[searcher.report_keys == 0] @ query
    assert searcher.sentence_scores(query)[0] == pytest.approx(windows.max())


def test_add_and_delete_keep_lexical_and_dense_aligned(
    tmp_path: Path,
    corpus: list[SegmentedReport],
    make_reports: Callable[..., SegmentedReport],
    tiny_model: Path,
) -> None:
    index = Index.build(corpus, tmp_path / "idx", _config(tiny_model), progress=False)
    before = index.component("dense").vectors.copy()
    index.add([make_reports("r9", ["Tension pneumothorax.", "No effusion."])], progress=False)
    assert _dense_keys(index) == _sentence_keys(index)
    np.testing.assert_array_equal(index.component("dense").vectors[: len(before)], before)
    index.delete(["r1", "r9"])
    assert _dense_keys(index) == _sentence_keys(index)
    components = index.manifest.components
    assert components["dense"]["sentences"] == components["lexical"]["documents"]["sentences"] == 14
    hits = index.search("tension pneumothorax", method="dense", level="report", top=10)
    assert {"r1", "r9"}.isdisjoint(h.report_id for h in hits)


def test_hnsw_matches_exact_search_and_survives_changes(
    tmp_path: Path,
    corpus: list[SegmentedReport],
    make_reports: Callable[..., SegmentedReport],
    tiny_model: Path,
) -> None:
    exact = Index.build(corpus, tmp_path / "exact", _config(tiny_model), progress=False)
    ann = Index.build(corpus, tmp_path / "ann", _config(tiny_model, exact_limit=0), progress=False)
    assert ann.manifest.components["dense"]["ann"] == "hnsw"
    assert (ann.generation.path / "dense" / "hnsw.faiss").is_file()
    for query in ("pleural effusion", "clear lungs", "cardiomegaly"):
        # every sentence, so ties (common with a tiny random model) cannot change the set
        want = exact.search(query, method="dense", level="sentence", top=16)
        got = ann.search(query, method="dense", level="sentence", top=16)
        assert [round(h.score, 5) for h in got] == [round(h.score, 5) for h in want]
        assert {(h.id, round(h.score, 5)) for h in got} == {(h.id, round(h.score, 5)) for h in want}
    ann.add([make_reports("r9", ["Tension pneumothorax."])], progress=False)
    ann.delete(["r2"])
    assert _dense_keys(ann) == _sentence_keys(ann)
    hits = ann.search("tension pneumothorax .", method="dense", level="sentence", top=20)
    assert len(hits) == 15 and "r2" not in {h.report_id for h in hits}


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
