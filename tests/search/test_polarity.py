"""Concept polarity as a hard filter on any method; concept summaries leave negations out."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import Report
from clinsearch.errors import ClinsearchError
from clinsearch.search.summary import concept_summaries


@pytest.fixture(scope="module")
def findings_index(tmp_path_factory: pytest.TempPathFactory, reports: list[Report]) -> Index:
    """The search corpus with BM25, findings and MiniLM embeddings."""
    config = IndexConfig(components=("bm25", "findings", "dense"))
    return Index.build(reports, tmp_path_factory.mktemp("pol") / "idx", config, progress=False)


def _ids(index: Index, query: str, method: str, mode: str, level: str = "report") -> set[str]:
    return {h.id for h in index.search(query, level, 10, method, polarity_filter=mode)}


@pytest.mark.parametrize("method", ["bm25", "dense", "hybrid"])
def test_polarity_filter_on_every_method(findings_index: Index, method: str) -> None:
    # pneumothorax: present in c1 and f1, negated in a1 and e2
    assert _ids(findings_index, "pneumothorax", method, "present") == {"c1", "f1"}
    assert _ids(findings_index, "pneumothorax", method, "absent") == {"a1", "e2"}
    assert _ids(findings_index, "pneumothorax", method, "any") == {"a1", "c1", "e2", "f1"}
    assert _ids(findings_index, "no pneumothorax", method, "query") == {"a1", "e2"}


def test_polarity_filter_at_sentence_and_patient_level(findings_index: Index) -> None:
    assert _ids(findings_index, "pneumothorax", "bm25", "present", "sentence") == {"c1#0", "f1#0"}
    assert _ids(findings_index, "pneumothorax", "dense", "absent", "patient") == {"P1", "P5"}


def test_polarity_filter_needs_a_concept_in_the_query(findings_index: Index) -> None:
    with pytest.raises(ClinsearchError, match="needs a lexicon concept"):
        findings_index.search("zzz qqq", polarity_filter="present")
    with pytest.raises(ClinsearchError, match="unknown polarity 'yes'"):
        findings_index.search("pneumothorax", polarity_filter="yes")


def test_concept_summary_keeps_only_present_findings(findings_index: Index) -> None:
    a1, e2, c1 = concept_summaries(findings_index, ["a1", "e2", "c1"])
    assert "pneumothorax" not in a1 and "effusion" not in a1
    assert "cardiomegaly" in e2 and "pneumothorax" not in e2
    assert c1.startswith("pneumothorax")


def test_rerank_reads_summaries(findings_index: Index, tiny_cross_encoder: Path) -> None:
    hits = findings_index.search(
        "pneumothorax", "report", 4, "bm25",
        rerank=str(tiny_cross_encoder), rerank_input="summary",
    )  # fmt: skip
    assert len(hits) == 4 and all(h.explanation["rerank_input"] == "summary" for h in hits)
