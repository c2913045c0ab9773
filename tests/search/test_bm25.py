"""BM25 search at every level: exact aggregation, whole-report mode, highlights, errors."""

from __future__ import annotations

from collections import defaultdict
from functools import partial

import pytest

from clinsearch import Hit, Index
from clinsearch.errors import ClinsearchError, InputError
from clinsearch.search.bm25 import BM25Retriever
from clinsearch.search.registry import METHODS
from clinsearch.units import LEVELS

QUERIES = (
    "right lower lobe pneumonia",
    "pleural effusion",
    "no pneumothorax",
    "clear lungs",
    "left",
)


def _brute_force(index: Index, query: str, level: str) -> list[tuple[float, str]]:
    """Every group at ``level`` scored by its best sentence, from the full sentence ranking."""
    sentences = index.search(query, method="bm25", level="sentence", top=10_000)
    best: dict[str, float] = defaultdict(float)
    for hit in sentences:
        group = {"sentence": hit.sentence_id, "report": hit.report_id}.get(level)
        group = group or (hit.visit_id if level == "visit" else hit.patient_id)
        best[group] = max(best[group], hit.score)
    return sorted(((score, group) for group, score in best.items()), key=lambda x: -x[0])


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("query", QUERIES)
def test_exact_top_k_at_every_level(index: Index, query: str, level: str) -> None:
    for top in (1, 2, 3, 50):
        hits = index.search(query, method="bm25", level=level, top=top)  # type: ignore[arg-type]
        expected = _brute_force(index, query, level)[:top]
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert [round(h.score, 4) for h in hits] == [round(s, 4) for s, _ in expected]
        by_score: dict[float, set[str]] = defaultdict(set)
        for score, group in _brute_force(index, query, level):
            by_score[round(score, 4)].add(group)
        assert all(h.id in by_score[round(h.score, 4)] for h in hits)
        assert len({h.id for h in hits}) == len(hits)


def test_levels_give_ids_of_their_level(index: Index) -> None:
    query = "right lower lobe pneumonia"
    sentence = index.search(query, method="bm25", level="sentence", top=1)[0]
    assert (sentence.id, sentence.report_id, sentence.sentence) == (
        "b1#1",
        "b1",
        "Right lower lobe pneumonia.",
    )
    assert [h.id for h in index.search(query, method="bm25", level="report", top=2)] == ["b1", "b2"]
    visits = index.search(query, method="bm25", level="visit")
    assert visits[0].id == "V3" and visits[0].report_id == "b1" and visits[0].patient_id == "P2"
    assert [h.id for h in visits].count("V3") == 1
    patients = index.search(query, method="bm25", level="patient")
    assert patients[0].id == "P2" and [h.id for h in patients].count("P2") == 1


def test_negated_query_keeps_no(index: Index) -> None:
    hits = index.search("no pneumothorax", method="bm25", level="sentence", top=2)
    assert {h.id for h in hits} == {"e2#2", "a1#1"}
    assert hits[0].explanation["matched_terms"] == ["no", "pneumothorax"]


def test_highlights_mark_matched_words(index: Index) -> None:
    hit = index.search("pleural effusions", method="bm25", level="sentence", top=10)
    bilateral = next(h for h in hit if h.id == "d1#2")
    assert [bilateral.sentence[s:e] for s, e in bilateral.highlights] == ["pleural", "effusions"]
    assert bilateral.explanation == {
        "method": "bm25",
        "scored": "sentence",
        "query_terms": ["pleural", "effus"],
        "matched_terms": ["pleural", "effus"],
    }


def test_whole_report_mode(index: Index) -> None:
    hits = index.search("left effusion", method="bm25", level="report", top=3, whole_report=True)
    assert hits[0].id == "a2"  # "left" and "effusion" both twice in the report
    assert hits[0].explanation["scored"] == "report"
    assert hits[0].sentence in {"Small left pleural effusion.", "Left effusion."}
    assert all(h.highlights for h in hits)
    by_sentence = index.search("left effusion", method="bm25", level="report", top=3)
    assert by_sentence[0].explanation["scored"] == "sentence"
    assert hits[0].score != by_sentence[0].score
    patients = index.search(
        "left effusion", method="bm25", level="patient", top=10, whole_report=True
    )
    assert patients[0].id == "P1" and len({h.id for h in patients}) == len(patients)
    assert (
        index.search("left", method="bm25", level="sentence", whole_report=True)[0].explanation[
            "scored"
        ]
        == "sentence"
    )


def test_search_many_matches_search(index: Index) -> None:
    many = index.search_many(list(QUERIES), method="bm25", level="patient", top=3)
    assert many == [index.search(q, method="bm25", level="patient", top=3) for q in QUERIES]


def test_no_terms_no_hits(index: Index) -> None:
    assert index.search("the of and", method="bm25") == []
    assert index.search("zebra", method="bm25") == []


def test_hit_to_dict(index: Index) -> None:
    data = index.search("cardiomegaly", method="bm25", level="sentence", top=1)[0].to_dict()
    assert data["id"] == "d1#0" and data["highlights"] == [[0, 12]]
    assert set(data) == {f for f in Hit.__dataclass_fields__}


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"level": "ward"}, ClinsearchError, "unknown level 'ward'"),
        ({"top": 0}, ClinsearchError, "top must be at least 1"),
        (
            {"method": "magic"},
            ClinsearchError,
            "unknown search method 'magic'; known methods: bm25",
        ),
        ({"colour": "red"}, ClinsearchError, "method 'bm25' does not take these options"),
    ],
)
def test_bad_arguments(index: Index, kwargs: dict, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        index.search("effusion", **({"method": "bm25"} | kwargs))


def test_empty_query(index: Index) -> None:
    with pytest.raises(InputError, match="empty query"):
        index.search("  ", method="bm25")


def test_registry_reaches_new_methods(index: Index, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(METHODS, "bm25-report", partial(BM25Retriever, whole_report=True))
    assert index.search("left effusion", method="bm25-report") == index.search(
        "left effusion", method="bm25", whole_report=True
    )
