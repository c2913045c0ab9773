"""Concept ranking over annotated sentences: completeness order, polarity, synonyms, ties."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.index.component import Generation, Segment, sentence_codes, sentence_parts
from clinsearch.index.concept_postings import ConceptIndex, write_postings
from clinsearch.index.findings import FINDINGS_SCHEMA
from clinsearch.search.concept.modifier_relations import (
    ELSEWHERE_CREDIT,
    UNSTATED_CREDIT,
    modifier_categories,
)
from clinsearch.search.concept.ranking import TIE_WEIGHT, ConceptRanker, PolarityOptions, Ranking
from clinsearch.search.query_parser import QueryParser
from clinsearch.search.vocabulary import TermVectors

SENTENCES = {
    "a#0": "Right lower lobe pneumonia.",
    "b#0": "Left lower lobe pneumonia.",
    "c#0": "Pneumonia.",
    "d#0": "No pneumonia.",
    "e#0": "Possible pneumonia.",
    "f#0": "Right lower lobe lobar pneumonia.",
    "g#0": "Right lower lobe airspace disease.",
    "h#0": "Cardiomegaly.",
    "i#0": "Enlarged heart with small pleural effusion.",
    "j#0": "No pneumothorax.",
    "k#0": "Bilateral lower lobe pneumonia.",
    "l#0": "Large right pneumothorax.",
    "m#0": "Fracture.",
    "n#0": "Old rib fracture.",
    "p#0": "Right pneumothorax.",  # one report: the side is stated in another sentence
    "p#1": "Pneumonia.",
}


@pytest.fixture(scope="module")
def ranker(tmp_path_factory: pytest.TempPathFactory, annotator: Annotator, hierarchy: Hierarchy,
           term_vectors: TermVectors) -> ConceptRanker:
    gen = Generation(tmp_path_factory.mktemp("gen"), (Segment("s000001", 0, 0, 0, 0),))
    folder = gen.segment_path(gen.segments[0])
    folder.mkdir(parents=True)
    rows = []
    for sid, findings in zip(SENTENCES, annotator.annotate_many(SENTENCES.values()), strict=True):
        for f in findings:
            rows.append({"report_key": ord(sid[0]), "sentence_index": int(sid[2:]),
                         "sentence_id": sid, "report_id": sid[0], "visit_id": sid[0],
                         "patient_id": sid[0], "concept": f.concept, "type": f.type,
                         "polarity": f.polarity, "pattern": f.pattern, "start": f.start,
                         "end": f.end, "text": f.text,
                         "modifiers": [{"category": m.category, "value": m.value, "text": m.text,
                                        "start": m.start, "end": m.end} for m in f.modifiers]})
    pq.write_table(pa.Table.from_pylist(rows, schema=FINDINGS_SCHEMA), folder / "findings.parquet")
    write_postings(folder, hierarchy)
    return ConceptRanker(ConceptIndex.open(gen), hierarchy, term_vectors,
                         modifier_categories(annotator.lexicon))


def ranked(ranker: ConceptRanker, parser: QueryParser, query: str, **options: object) -> list[str]:
    ranking = ranker.rank(parser.parse(query), PolarityOptions(**options))  # type: ignore[arg-type]
    return [sentence_id(ranker, s) for s in ranking.sentences]


def sentence_id(ranker: ConceptRanker, code: int) -> str:
    """The test id ("p#1") of a sentence code of the concept index."""
    key, index = (int(v[0]) for v in sentence_parts(np.array([code])))
    return f"{chr(key)}#{index}"


def test_more_complete_patterns_rank_higher(ranker: ConceptRanker, parser: QueryParser) -> None:
    order = ranked(ranker, parser, "right lower lobe pneumonia")
    # full match; child concept full match; bilateral (partial side); other side; no modifiers;
    # parent concept with both modifiers
    assert order[:2] == ["a#0", "f#0"]
    assert order.index("k#0") < order.index("b#0") < order.index("c#0")
    assert "g#0" in order
    assert "d#0" not in order and order[-1] == "e#0"  # negated never; hedged last, a tier lower


def test_unstated_side_ranks_between_same_and_other_side(
    ranker: ConceptRanker, parser: QueryParser
) -> None:
    order = ranked(ranker, parser, "right pneumonia")
    assert order.index("a#0") < order.index("k#0") < order.index("c#0") < order.index("b#0")
    blind = ConceptRanker(ranker.index, ranker.hierarchy, ranker.vectors)  # no categories known
    gap = {}
    for name, r in (("known", ranker), ("blind", blind)):
        ranking = r.rank(parser.parse("right pneumonia"))
        pairs = zip(ranking.sentences, ranking.scores, strict=True)
        score = {sentence_id(r, s): v for s, v in pairs}
        gap[name] = score["c#0"] - score["b#0"]
    assert abs(gap["blind"]) < 2 * TIE_WEIGHT < gap["known"]  # blind: only the tie-break


def test_modifier_stated_elsewhere_in_the_report_earns_partial_credit(
    ranker: ConceptRanker, parser: QueryParser
) -> None:
    query = parser.parse("right pneumonia")
    order = ranked(ranker, parser, "right pneumonia")
    assert order.index("a#0") < order.index("p#1") < order.index("c#0") < order.index("b#0")
    ranking = ranker.rank(query)
    p1, c0 = (int(sentence_codes([ord(r)], [i])[0]) for r, i in (("p", 1), ("c", 0)))
    assert ranking.parts(p1)[0].match.explain()["modifiers"] == {"right": ELSEWHERE_CREDIT}
    assert ranking.parts(c0)[0].match.explain()["modifiers"] == {"right": UNSTATED_CREDIT}
    assert "p#1" not in ranked(ranker, parser, "left pneumonia")[:3]


def test_polarity_is_respected_by_default_and_widened_on_request(
    ranker: ConceptRanker, parser: QueryParser
) -> None:
    plain = ranker.rank(parser.parse("pneumonia"), PolarityOptions())
    order = [sentence_id(ranker, s) for s in plain.sentences]
    assert "d#0" not in order  # a negated mention never ranks for a positive query
    tiers = dict(zip(order, plain.tier(plain.sentences), strict=True))
    assert tiers["e#0"] == "hedged" and tiers["c#0"] == "stated" and tiers["a#0"] == "stated"
    assert tiers["g#0"] == "partial"  # airspace disease: a broader finding, stated now
    # The hedged mention ranks with stated now by completeness (half the polarity part): after
    # every complete stated mention, before the broader finding stated now.
    stated = [order.index(s) for s, t in tiers.items() if t == "stated"]
    assert max(stated) < order.index("e#0") < order.index("g#0")
    score = dict(zip(order, plain.scores.tolist(), strict=True))
    assert score["e#0"] < score["c#0"] - 0.2  # less complete, not a tie-break
    widened = ranked(ranker, parser, "pneumonia", include_uncertain=True)
    assert "e#0" in widened and "d#0" not in widened
    assert widened.index("e#0") > widened.index("k#0")  # uncertain scores below present
    anything = ranked(ranker, parser, "pneumonia", polarity="any")
    assert {"d#0", "e#0"} <= set(anything)
    assert ranked(ranker, parser, "no pneumothorax") == ["j#0"]


def test_synonym_query_finds_the_concept(ranker: ConceptRanker, parser: QueryParser) -> None:
    assert set(ranked(ranker, parser, "enlarged heart")) == {"h#0", "i#0"}
    assert ranked(ranker, parser, "cardiomegaly") == ranked(ranker, parser, "enlarged heart")


def test_ties_are_broken_by_pattern_similarity(ranker: ConceptRanker, parser: QueryParser) -> None:
    ranking = ranker.rank(parser.parse("pneumonia"))
    code = {sentence_id(ranker, s): s for s in ranking.sentences}
    score = dict(zip(ranking.sentences.tolist(), ranking.scores.tolist(), strict=True))
    # both fully match "pneumonia"; the plain pattern is closer to the plain query
    assert ranking.parts(code["c#0"])[0].match.score == 1.0
    assert ranking.parts(code["a#0"])[0].match.score == 1.0
    assert score[code["c#0"]] > score[code["a#0"]]
    assert ranking.sentences[0] == code["c#0"]


def test_wording_breaks_ties_as_strongly_as_similarity(
    ranker: ConceptRanker, parser: QueryParser
) -> None:
    codes = {sid: int(sentence_codes([ord(sid[0])], [int(sid[2:])])[0]) for sid in SENTENCES}

    def worded(query: str, best: str) -> list[str]:
        wording = (np.array([codes[best]]), np.array([1.0]))
        return [sentence_id(ranker, s) for s in ranker.rank(parser.parse(query),
                                                            wording=wording).sentences]

    # similarity alone puts the plain "Pneumonia." first; the query's wording outweighs it
    assert worded("pneumonia", "a#0")[0] == "a#0"
    # but never a more complete match: the side stays ahead of the wording
    assert worded("right lower lobe pneumonia", "b#0")[:2] == ["a#0", "f#0"]


def test_group_scores_average_over_patterns(ranker: ConceptRanker, parser: QueryParser) -> None:
    ranking = ranker.rank(parser.parse("cardiomegaly with pleural effusion"))
    ids = [sentence_id(ranker, s) for s in ranking.sentences]
    assert ids[:2] == ["i#0", "h#0"]
    parts = ranking.parts(int(ranking.sentences[0]))
    assert [p.query.concept for p in parts] == ["cardiomegaly", "pleural_effusion"]
    assert ranking.scores[1] == pytest.approx(0.5, abs=0.01)


def test_query_anatomy_is_a_part_matched_in_the_same_sentence(
    ranker: ConceptRanker, parser: QueryParser
) -> None:
    query = parser.parse("rib fracture")
    assert [s.concept for s in query.sites[0]] == ["rib"]
    ranking = ranker.rank(query)
    assert [sentence_id(ranker, s) for s in ranking.sentences] == ["n#0", "m#0"]
    parts = ranking.parts(int(ranking.sentences[0]))
    assert parts[0].match.explain()["anatomy"] == {"rib": 1.0}
    assert ranking.scores[1] == pytest.approx(2 / 3, abs=0.01)


def test_ranking_top_of_nothing_is_empty() -> None:
    ranking = Ranking(np.array([5, 7, 9]), np.array([0.2, 0.9, 0.5]), lambda _: ())
    codes, scores = ranking.top(0)
    assert codes.tolist() == [] and scores.tolist() == []
    assert ranking.top(2)[0].tolist() == [7, 9]
