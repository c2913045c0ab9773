"""Cross-encoder re-ranking: order follows the model's own scores; the tail keeps its order."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from clinsearch import Index
from clinsearch.errors import ClinsearchError
from clinsearch.search.rerank import report_texts


def _model_scores(folder: Path, query: str, passages: list[str]) -> np.ndarray:
    """The tiny cross-encoder's logits computed directly with transformers."""
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(folder), local_files_only=True)
    batch = tokenizer([query] * len(passages), passages, padding=True, return_tensors="pt")
    with torch.inference_mode():
        return model(**batch).logits[:, 0].numpy()


@pytest.mark.parametrize("passage", ["report", "sentence"])
def test_rerank_orders_top_k_by_cross_encoder(
    dense_index: Index, tiny_cross_encoder: Path, passage: str
) -> None:
    query = "pleural effusion"
    first = dense_index.search(query, "report", 8, "bm25")
    depth = 2
    hits = dense_index.search(
        query,
        "report",
        8,
        "bm25",
        rerank=str(tiny_cross_encoder),
        rerank_depth=depth,
        rerank_input=passage,
    )
    head = first[:depth]
    texts = (
        report_texts(dense_index, [h.report_id for h in head])
        if passage == "report"
        else [h.sentence for h in head]
    )
    logits = _model_scores(tiny_cross_encoder, query, texts)
    expected = [head[i].id for i in sorted(range(depth), key=lambda i: (-logits[i], i))]
    assert [h.id for h in hits[:depth]] == expected
    assert [h.id for h in hits[depth:]] == [h.id for h in first[depth:]]
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)  # scores sort like ranks (TREC runs)
    assert len(hits) > depth  # a tail exists
    assert hits[depth].explanation["first_stage_score"] == first[depth].score
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert hits[0].explanation["reranked"] and hits[0].explanation["rerank_input"] == passage


def test_rerank_option_errors(dense_index: Index, tiny_cross_encoder: Path, tmp_path: Path) -> None:
    with pytest.raises(ClinsearchError, match="need `rerank`"):
        dense_index.search("effusion", rerank_depth=5)
    with pytest.raises(ClinsearchError, match="unknown re-rank input 'title'"):
        dense_index.search("effusion", rerank=str(tiny_cross_encoder), rerank_input="title")
    with pytest.raises(ClinsearchError, match="does not exist"):
        dense_index.search("effusion", rerank=str(tmp_path / "none"))


def test_poly_encoder_reranks_by_its_own_scores(
    dense_index: Index, tmp_path: Path
) -> None:
    from clinsearch.models.poly_encoder import PolyEncoder, PolyScorer

    from ..tiny_models import build_tiny_bert

    folder = tmp_path / "poly"
    PolyEncoder.from_base(build_tiny_bert(tmp_path / "base"), codes=3).save(folder)
    query, depth = "pleural effusion", 3
    first = dense_index.search(query, "report", 8, "hybrid")
    hits = dense_index.search(query, "report", 8, "hybrid", rerank=f"poly:{folder}",
                              rerank_depth=depth, rerank_input="sentence")
    head = first[:depth]
    scores = PolyScorer(folder).score(query, [h.sentence for h in head])
    expected = [head[i].id for i in sorted(range(depth), key=lambda i: (-scores[i], i))]
    assert [h.id for h in hits[:depth]] == expected
    assert [h.id for h in hits[depth:]] == [h.id for h in first[depth:]]
    assert hits[0].explanation["reranked"]
    with pytest.raises(ClinsearchError, match=r"poly-encoder model folder .* poly.json"):
        dense_index.search(query, "report", 8, "bm25", rerank=f"poly:{tmp_path / 'base'}")
