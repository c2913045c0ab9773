"""Negation-aware search for a phrase no lexicon concept names, end to end on the sample index
(plus a few reports written for these tests): concept search, hybrid, cohorts, explain-query."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clinsearch import Index
from clinsearch.annotate.annotator import annotator_for
from clinsearch.annotate.phrase import read_phrase_query, substring_spans
from clinsearch.cli import app
from clinsearch.corpus.model import Report
from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path
from clinsearch.search.cohort import Cohort

# "zebra stripes" is no finding of any lexicon: each report states it another way
ZEBRA = {
    "z1": "FINDINGS: Zebra stripes in the left lower lobe.",
    "z2": "FINDINGS: No zebra stripes. Lungs are clear.",
    "z3": "FINDINGS: Possible zebra stripes at the right base.",
    "z4": "INDICATION: History of zebra stripes. FINDINGS: Heart size is normal.",
    "z5": "FINDINGS: Zebra stripes are not seen.",
    "z6": "FINDINGS: Right lower lobe infection.",  # pneumonia, in the shipped lexicon
    "z7": "IMPRESSION: Urinary tract infection. Clear lungs.",
}


@pytest.fixture(scope="module")
def index_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    reports = [*read_reports(sample_reports_path(), SAMPLE_FORMAT),
               *(Report(id=i, text=t, patient_id=i) for i, t in ZEBRA.items())]
    path = tmp_path_factory.mktemp("phrase") / "idx"
    Index.build(reports, path, progress=False).close()
    return path


@pytest.fixture(scope="module")
def index(index_path: Path) -> Index:
    return Index.open(index_path)


def ids(index: Index, query: str, method: str = "concept") -> set[str]:
    return {h.id for h in index.search(query, top=50, method=method)}


def test_phrase_query_reading() -> None:
    annotator = annotator_for()
    read = read_phrase_query(annotator, "no evidence of zebra stripes")
    assert (read.phrase, read.polarity, read.context) == ("zebra stripes", "absent", ())
    assert read_phrase_query(annotator, "zebra stripes are not seen").polarity == "absent"
    assert read_phrase_query(annotator, "possible zebra stripes").polarity == "uncertain"
    history = read_phrase_query(annotator, "history of zebra stripes")
    assert history.context == ("historical",) and history.phrase == "zebra stripes"
    assert read_phrase_query(annotator, "--").phrase == ""  # no words: nothing to find
    for cue_words in ("no", "clear"):  # cue words alone are sought as written
        read = read_phrase_query(annotator, cue_words)
        assert (read.phrase, read.polarity) == (cue_words, "present")
    assert substring_spans("No zebra-stripes.", "stripe") == [(9, 16)]  # whole words


def tiers(index: Index, query: str, method: str = "concept") -> list[tuple[str, str]]:
    """Each hit's id and tier, best first."""
    return [(h.id, h.explanation["tier"]) for h in index.search(query, top=50, method=method)]


def test_polarity_of_a_phrase_is_read(index: Index) -> None:
    # every mention the query does not contradict, by tier: stated now, hedged, then z4's
    # (historical, and in the reason for the exam: the weaker of the two, historical)
    assert tiers(index, "zebra stripes") == [("z1", "stated"), ("z3", "hedged"),
                                             ("z4", "historical")]
    assert z4_trigger(index) == "History"
    assert ids(index, "no zebra stripes") == {"z2", "z5"}  # never a positive or hedged one
    assert ids(index, "possible zebra stripes") == {"z1", "z3", "z4"}  # hedged asks for it
    assert tiers(index, "history of zebra stripes")[0] == ("z4", "historical")  # stated: first
    assert tiers(index, "zebra stripes", "concept:include_uncertain=true")[:2] == [
        ("z1", "stated"), ("z3", "stated")]
    # z4's mention is historical and, in the reason for the exam, indication: both flags asked
    assert tiers(index, "zebra stripes", "concept:context=historical")[-1] == ("z4",
                                                                             "indication")
    assert ("z4", "stated") in tiers(index, "zebra stripes",
                                     "concept:context=historical,indication")
    assert ids(index, "zebra stripes", "concept:polarity=any") == {"z1", "z2", "z3", "z4", "z5"}
    assert ids(index, "no zebra stripes", "bm25") >= {"z1", "z2", "z3", "z4", "z5"}


def z4_trigger(index: Index) -> str:
    """The cue words that put z4's mention of zebra stripes in its tier."""
    hit = next(h for h in index.search("zebra stripes", top=50, method="concept")
               if h.id == "z4")
    return str(hit.explanation["trigger"]["text"])


def test_hits_say_they_matched_as_text(index: Index) -> None:
    hit = index.search("no zebra stripes", top=1, method="concept")[0]
    assert hit.explanation["match"] == "text"
    assert hit.explanation["summary"] == 'matched as text: "zebra stripes" absent'
    assert "searched as text" in hit.explanation["fallback"]
    assert [hit.sentence[s:e].lower() for s, e in hit.highlights] == ["zebra stripes"]
    concept = index.search("pneumonia", top=1, method="concept")[0]
    assert concept.explanation["match"] == "concept"
    fused = index.search("no zebra stripes", top=2, method="hybrid:methods=bm25,concept")
    assert {h.id for h in fused if h.explanation.get("match") == "text"} == {"z2", "z5"}


def test_unknown_words_are_never_dropped(index: Index) -> None:
    """"urinary tract infection" is not an infection of the lungs: words the lexicon does not
    know keep the whole query as a phrase (or a concept of its own), never pneumonia."""
    assert ids(index, "urinary tract infection") == {"z7"}
    assert "z6" in ids(index, "right lower lobe pneumonia")


def test_cohort_text_and_unknown_terms_read_polarity(index: Index) -> None:
    cohort = Cohort(index)

    def members(query: str) -> set[str]:
        return {m.ids[0] for m in cohort.members(query, "report")}

    assert members('text:"zebra stripes"') == {"z1"}
    assert members('text:"no zebra stripes"') == {"z2", "z5"}
    assert members('text:"zebra stripes" AND context:historical') == {"z4"}
    assert members("zebra stripes") == {"z1"}  # a term naming no finding: matched as text
    # a hedged term asks for the phrase: definite and hedged mentions both count
    assert members('"no zebra stripes" OR "possible zebra stripes"') == {"z1", "z2", "z3", "z5"}
    assert [m.term for m in cohort.members('"no zebra stripes"', "report")] == [
        'text "no zebra stripes"'] * 2
    warnings = cohort.warnings("pneumonia AND NOT zebra stripes")
    assert warnings and "'zebra stripes' is matched as text" in warnings[0]


def test_cli_search_and_explain_query(index_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(app, ["search", str(index_path), "no zebra stripes", "--method",
                                 "concept", "--format", "json"])
    assert result.exit_code == 0, result.output
    hits = json.loads(result.stdout)["hits"]
    assert {h["id"] for h in hits} == {"z2", "z5"}
    assert {h["explanation"]["match"] for h in hits} == {"text"}
    explained = runner.invoke(app, ["explain-query", "no zebra stripes", "--index",
                                    str(index_path), "--json"])
    assert explained.exit_code == 0, explained.output
    as_text = json.loads(explained.stdout)["as_text"]
    assert (as_text["phrase"], as_text["polarity"]) == ("zebra stripes", "absent")
    none = runner.invoke(app, ["search", str(index_path), "possible zebra stripes in the"
                               " skull", "--method", "concept", "--format", "json"])
    reason = json.loads(none.stdout)["no_hits_reason"]
    assert "no sentence mentions \"zebra stripes in the skull\" present or uncertain" in reason
