"""Hybrid retrieval: fused rankings equal the fusion of the methods' own rankings."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import Report
from clinsearch.errors import ClinsearchError
from clinsearch.search.fusion import (
    RRF_K,
    Fusion,
    reciprocal_rank_fusion,
    weighted_score_fusion,
)
from clinsearch.search.hybrid import (
    CONCEPT_TIE_SPAN,
    DEFAULT_NORMALISATION,
    DEFAULT_WEIGHTS,
    fusion_of,
)
from clinsearch.search.retriever import UnitRanker, rank_many

from .conftest import MINI_LEXICON

QUERIES = ("pleural effusion", "enlarged heart", "collapsed lung")


@pytest.fixture(scope="module")
def concept_index(tmp_path_factory: pytest.TempPathFactory, reports: list[Report]) -> Index:
    """The search corpus with every component (test lexicon): hybrid fuses all three methods."""
    lexicon = {"lexicon": str(MINI_LEXICON)}
    config = IndexConfig(
        components=("bm25", "findings", "concepts", "dense"),
        options={"findings": lexicon, "concepts": lexicon},
    )
    return Index.build(reports, tmp_path_factory.mktemp("hybrid") / "idx", config, progress=False)


def _ranking(index: Index, method: str, query: str, level: str) -> list[tuple[str, float]]:
    return [(h.id, h.score) for h in index.search(query, level, 100, method)]


@pytest.mark.parametrize("level", ["report", "patient"])
def test_rrf_hybrid_fuses_bm25_and_dense(dense_index: Index, level: str) -> None:
    for query in QUERIES:
        runs = [_ranking(dense_index, m, query, level) for m in ("bm25", "dense")]
        expected = reciprocal_rank_fusion(runs)[:5]
        hits = dense_index.search(query, level, 5, "hybrid", fusion="rrf", weights="dense=1")
        assert [(h.id, h.score) for h in hits] == [(i, pytest.approx(s)) for i, s in expected]
        assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
        assert hits[0].explanation["method"] == "hybrid"
        assert set(hits[0].explanation["ranks"]) <= {"bm25", "dense"}


def test_weighted_hybrid_uses_the_given_weights(dense_index: Index) -> None:
    runs = [_ranking(dense_index, m, "pleural effusion", "report") for m in ("bm25", "dense")]
    expected = weighted_score_fusion(runs, weights=[1.0, 3.0], normalisation="zscore")[:4]
    hits = dense_index.search(
        "pleural effusion",
        "report",
        4,
        "hybrid",
        fusion="weighted",
        weights="dense=3",
        normalisation="zscore",
    )
    assert [(h.id, h.score) for h in hits] == [(i, pytest.approx(s)) for i, s in expected]


def test_defaults_are_the_dev_tuned_settings(dense_index: Index) -> None:
    tuned = DEFAULT_WEIGHTS["weighted"]
    weights = ",".join(f"{m}={tuned.get(m, 1.0)}" for m in ("bm25", "dense"))
    explicit = {"fusion": "weighted", "weights": weights}
    explicit |= {"normalisation": DEFAULT_NORMALISATION, "rrf_k": RRF_K}
    for query in QUERIES:
        default = dense_index.search(query, "report", 5, "hybrid")
        given = dense_index.search(query, "report", 5, "hybrid", **explicit)
        assert [(h.id, h.score) for h in default] == [(h.id, h.score) for h in given]


def test_dense_finds_what_bm25_cannot(dense_index: Index) -> None:
    # "cardiomegaly" shares no word with h1's "enlargement of the cardiac silhouette"
    bm25 = {h.id for h in dense_index.search("cardiomegaly", "report", 5, "bm25")}
    hybrid = [h.id for h in dense_index.search("cardiomegaly", "report", 3, "hybrid")]
    assert bm25 == {"d1", "e2"} and "h1" in hybrid


def test_hybrid_option_errors(dense_index: Index) -> None:
    with pytest.raises(ClinsearchError, match="bad weight 'sparse=2'"):
        dense_index.search("effusion", method="hybrid", weights="sparse=2")
    with pytest.raises(ClinsearchError, match="two or more"):
        dense_index.search("effusion", method="hybrid", methods="bm25")
    with pytest.raises(ClinsearchError, match="unknown fusion 'max'"):
        dense_index.search("effusion", method="hybrid", fusion="max")


def test_default_fusion_is_tiered_by_concept_when_concept_takes_part() -> None:
    tiered = fusion_of(["bm25", "dense", "concept"])
    tuned = DEFAULT_WEIGHTS["tiered"]
    assert tiered == Fusion(
        "tiered",
        (tuned["bm25"], tuned["dense"], tuned["concept"]),
        DEFAULT_NORMALISATION,
        RRF_K,
        anchor=2,
        tolerance=CONCEPT_TIE_SPAN,
    )
    assert fusion_of(["concept", "bm25"], weights="bm25=2").weights == (1.0, 2.0)
    assert fusion_of(["bm25", "dense"]).kind == "weighted"
    with pytest.raises(ClinsearchError, match="add concept to the methods"):
        fusion_of(["bm25", "dense"], "tiered")


def test_tiered_hybrid_keeps_concept_tiers_first(concept_index: Index) -> None:
    names = ("bm25", "dense", "concept")
    mixed = 0
    for query in ("right lower lobe pneumonia", "pleural effusion", "enlarged heart"):
        runs = [_ranking(concept_index, m, query, "report") for m in names]
        expected = fusion_of(names).apply(runs)[:6]
        hits = concept_index.search(query, "report", 6, "hybrid")
        assert [(h.id, h.score) for h in hits] == [(i, pytest.approx(s)) for i, s in expected]
        assert hits[0].explanation["fusion"] == "tiered"
        # every report concept search returns comes before every report it does not
        found = [h.id in dict(runs[2]) for h in hits]
        assert found == sorted(found, reverse=True)
        mixed += any(found) and not all(found)
    assert mixed  # some query's top 6 holds both kinds, so the order above is tested


def test_tiered_hybrid_names_concept_search_tiers(concept_index: Index) -> None:
    concept = concept_index.search("right pleural effusion", "report", 100, "concept")
    tiers = {h.id: h.explanation["tier"] for h in concept}
    assert {"stated", "partial"} <= set(tiers.values())
    fused = concept_index.search("right pleural effusion", "report", 100, "hybrid")
    named = [(h.id, h.explanation.get("tier")) for h in fused if h.id in tiers]
    assert named == [(i, tiers[i]) for i, _ in named]  # each fused hit keeps its tier
    assert [h.id for h in fused][: len(tiers)] == [i for i, _ in named]  # concept's units first


@pytest.fixture(scope="module")
def tied_index(tmp_path_factory: pytest.TempPathFactory, reports: list[Report]) -> Index:
    """The search corpus and copies of one report under ids whose order is not the index's:
    equal scores, as repeated sentences give, for every method."""
    copies = [Report(id=f"t{9 - i}", text="FINDINGS: The lungs are clear. No pneumothorax."
                     " Small left pleural effusion.", patient_id=f"Q{i}", visit_id=f"W{i}")
              for i in range(6)]
    lexicon = {"lexicon": str(MINI_LEXICON)}
    config = IndexConfig(components=("bm25", "findings", "concepts", "dense"),
                         options={"findings": lexicon, "concepts": lexicon})
    return Index.build([*reports, *copies], tmp_path_factory.mktemp("tied") / "idx", config,
                       progress=False)


@pytest.mark.parametrize("level", ["sentence", "report", "visit", "patient"])
def test_fusion_by_unit_numbers_ranks_as_the_fusion_by_ids(tied_index: Index, level: str
                                                           ) -> None:
    """Hybrid matches the methods' units by their numbers in the index and reads the ids of
    the units it shows alone; its ranking is the fusion of the same runs by id, ties in id
    order."""
    hybrid = tied_index.session.retriever("hybrid", {})
    ties = 0
    for query in (*QUERIES, "no pneumothorax", "lungs are clear", "left effusion"):
        depth = min(hybrid.depth, tied_index.level_size(level))  # type: ignore[arg-type]
        runs = [rank_many(r, [query], level, depth)[0] for r in hybrid.retrievers]
        assert all(run.keys is not None for run in runs)
        by_id = hybrid.fusion.apply([list(zip(run.ids, run.scores, strict=True))
                                     for run in runs])
        for top in (1, 3, 10):
            ranked = hybrid.rank_many([query], level, top)[0]
            assert list(zip(ranked.ids, ranked.scores, strict=True)) == by_id[:top]
        scores = [score for _, score in by_id[:10]]
        ties += len(scores) - len(set(scores))
    assert ties  # the tie order was exercised


@pytest.mark.parametrize(
    "method", ["bm25", "dense", "concept", "bm25:whole_report=true", "hybrid"])
@pytest.mark.parametrize("level", ["sentence", "report", "patient"])
def test_a_ranking_builds_the_hits_search_gives_at_any_positions(
    concept_index: Index, method: str, level: str
) -> None:
    """Hybrid fusion reads each method's ranking and builds hits only for the fused top, and
    the server builds only a page's hits: those hits equal the ones search gives at the same
    ranks."""
    retriever = concept_index.session.retriever(method, {})
    assert isinstance(retriever, UnitRanker)  # ranks without building every hit
    for query in (*QUERIES, "no pleural effusion", "no free air"):
        full = retriever.search(query, level, 20)  # type: ignore[arg-type]
        for ranked in (rank_many(retriever, [query], level, 20)[0],  # type: ignore[arg-type]
                       concept_index.rank(query, level, 20, method)):  # type: ignore[arg-type]
            assert ranked.ids == [h.id for h in full]
            assert ranked.scores == [h.score for h in full]
            picked = [p for p in (4, 0, 2) if p < len(full)]
            assert ranked.hits(picked) == [full[p] for p in picked]
            assert ranked.hits() == full
        for hit in full:  # explanations hold plain values: the JSON form needs no deep copy
            assert hit.to_dict() == asdict(hit) | {"highlights": [list(s) for s in hit.highlights]}
