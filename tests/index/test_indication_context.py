"""The indication context (issues 25, 26): a mention in the clinical history / reason for exam
carries ``indication``, its own flag beside ConText's "history of", from the annotation through
the index to cohorts, search, the HTTP API and the OMOP export; a section's meaning changed per
index from the CLI; indexes built before the flag (their history sections ``historical``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import Report
from clinsearch.corpus.readers import read_reports
from clinsearch.index.omop import write_note_nlp
from clinsearch.search.cohort import Cohort
from clinsearch.search.concept.ranking import PolarityOptions
from clinsearch.search.filters import ReportFilters
from clinsearch.search.no_hits import no_hits_reason

from ..server.conftest import Server, clinsearch, serving

TEXTS = {
    "i1": "CLINICAL HISTORY: Cough. History of pneumonia. Evaluate for pneumothorax.\n"
          "IMPRESSION: No acute disease.",
    "i2": "CLINICAL HISTORY: Fever.\nIMPRESSION: Right lower lobe pneumonia.",
    "i3": "FINDINGS: History of pneumonia. Cough.",
    "i4": "CLINICAL HISTORY: History of zebra stripes.\nIMPRESSION: Normal study.",
}
REPORTS = tuple(Report(id=i, patient_id=f"p{i}", visit_id=f"v{i}", text=t)
                for i, t in TEXTS.items())


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Index:
    return Index.build(REPORTS, tmp_path_factory.mktemp("indication") / "idx", progress=False)


def flags(index: Index, report_id: str) -> dict[str, tuple[tuple[str, ...], str | None]]:
    """concept -> (context flags, the trigger's rule) of a report's findings."""
    return {f.finding.concept: (f.finding.context, f.finding.trigger and f.finding.trigger.rule)
            for f in index.report(report_id).findings}


def members(index: Index, query: str, *context: str) -> set[str]:
    """The report cohort of ``query``, counting the ``context`` flags besides asserted ones."""
    cohort = Cohort(index, PolarityOptions(context=context))
    return {m.report_id for m in cohort.members(query, "report")}


def test_the_history_section_is_indication_and_history_of_stays_historical(built: Index) -> None:
    i1 = flags(built, "i1")
    assert i1["cough"] == (("indication",), "section")  # the reason for the exam
    # "history of" inside the reason for exam: past disease, and named as why the study was done
    assert i1["pneumonia"] == (("historical", "indication"), "history")
    assert i1["pneumothorax"][0] == ("hypothetical", "indication")  # asked, not stated
    assert flags(built, "i3")["pneumonia"] == (("historical",), "history")
    assert flags(built, "i3")["cough"] == ((), None)


def test_cohorts_count_the_reports_own_findings_unless_asked(built: Index) -> None:
    assert members(built, "cough") == {"i3"}
    assert members(built, "cough", "indication") == {"i1", "i3"}  # widened
    assert members(built, "cough context:indication") == {"i1"}  # narrowed
    assert members(built, "pneumonia") == {"i2"}
    # a finding counts when every flag it carries is asked for
    assert members(built, "pneumonia", "indication") == {"i2"}
    assert members(built, "pneumonia", "historical") == {"i2", "i3"}
    assert members(built, "pneumonia", "historical", "indication") == {"i1", "i2", "i3"}
    assert members(built, "pneumonia context:historical") == {"i1", "i3"}
    assert members(built, "pneumothorax", "indication") == set()  # "evaluate for" stays asked
    assert Cohort(built).polarity_mix("cough") == {"present": 1, "absent": 0, "uncertain": 0,
                                                   "historical": 0, "indication": 1}
    assert Cohort(built).polarity_mix("pneumonia") == {"present": 1, "absent": 0, "uncertain": 0,
                                                       "historical": 2, "indication": 1}


def test_no_hits_names_the_indication(built: Index) -> None:
    reason = no_hits_reason(built, "fever")
    assert "never present" in reason and "1 indication" in reason and "--context" in reason


def tiered(index: Index, query: str, method: str = "concept") -> list[tuple[str, str]]:
    """Each hit's report id and search tier, best first."""
    return [(h.id, h.explanation.get("tier", "")) for h in index.search(query, "report", 10,
                                                                          method)]


def test_search_and_filters_read_the_flag(built: Index) -> None:
    def found(query: str, method: str, **options: object) -> set[str]:
        return {h.id for h in built.search(query, "report", 10, method, **options)}

    # ranked search returns the reason for the exam too, a tier below the report's own finding
    assert tiered(built, "cough") == [("i3", "stated"), ("i1", "indication")]
    assert tiered(built, "cough", "concept:context=indication") == [("i1", "stated"),
                                                                   ("i3", "stated")]
    assert found("pneumonia", "concept:context=historical,indication") == {"i1", "i2", "i3"}
    assert tiered(built, "fever", "hybrid:context=indication,methods=bm25,concept")[0] == (
        "i2", "stated")
    assert found("cough", "bm25", filters=ReportFilters(context="indication")) == {"i1"}
    with pytest.raises(Exception, match="unknown context 'reason'"):
        found("cough", "concept:context=reason")


def test_a_query_that_says_history_of_asks_for_the_historical_mentions(built: Index) -> None:
    """ "history of X" reads as ``context:historical X`` in search and cohorts alike: the
    historical mentions, wherever written (i1's is also the reason for the exam), never the
    current X (i2)."""
    for method in ("concept", "hybrid:methods=bm25,concept"):
        hits = tiered(built, "history of pneumonia", method)
        # the historical tier first; the current pneumonia (i2) after it, never before
        assert {i for i, _ in hits[:2]} == {"i1", "i3"} and hits[2] == ("i2", "stated")
        assert {t for _, t in hits[:2]} == {"historical"}
    assert members(built, "history of pneumonia") == {"i1", "i3"}
    assert members(built, "history of pneumonia") == members(built,
                                                             "pneumonia context:historical")
    assert members(built, '"history of pneumonia" context:indication') == {"i1"}  # both flags
    # the same for a phrase no lexicon names, searched as text
    assert tiered(built, "history of zebra stripes") == [("i4", "historical")]
    assert members(built, "history of zebra stripes") == {"i4"}
    assert 'mentions "giraffe spots" present in historical context' in no_hits_reason(
        built, "history of giraffe spots")


def test_a_phrase_searched_as_text_carries_its_sections_flag(built: Index) -> None:
    """A phrase no lexicon names, in the reason for the exam, is indication like a finding
    there: not the report's own finding unless asked for."""
    def found(query: str, method: str = "concept") -> set[str]:
        return {h.id for h in built.search(query, "report", 10, method)}

    assert tiered(built, "zebra stripes") == [("i4", "historical")]  # the weaker flag's tier
    assert tiered(built, "zebra stripes", "concept:context=historical,indication") == [
        ("i4", "stated")]
    assert tiered(built, "zebra stripes", "concept:context=historical") == [
        ("i4", "indication")]  # one flag admitted: the other's tier
    assert members(built, "zebra stripes") == set()
    assert members(built, "zebra stripes", "historical", "indication") == {"i4"}
    assert members(built, "zebra stripes context:indication") == {"i4"}
    assert "never present with every asked modifier in historical context, as the query says" \
        in no_hits_reason(built, "history of pneumothorax")


def test_omop_keeps_the_indication_as_the_patients_condition(built: Index,
                                                              tmp_path: Path) -> None:
    out = tmp_path / "note_nlp.parquet"
    write_note_nlp(built.path, out)
    rows = [r for r in pq.read_table(out).to_pylist()
            if "context=indication" in r["term_modifiers"]]
    by_word = {r["lexical_variant"].lower(): r for r in rows}
    assert (by_word["cough"]["term_exists"], by_word["cough"]["term_temporal"]) == ("Y", "present")
    assert by_word["pneumonia"]["term_temporal"] == "past"
    assert by_word["pneumothorax"]["term_exists"] == "N"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("corpus") / "reports.jsonl"
    path.write_text("".join(json.dumps({"id": r.id, "patient_id": r.patient_id,
                                        "visit_id": r.visit_id, "text": r.text}) + "\n"
                            for r in REPORTS))
    return path


@pytest.mark.parametrize(("meaning", "cough"), [("none", ()), ("historical", ("historical",)),
                                                ("indication", ("indication",))])
def test_index_cli_changes_a_section_meaning(corpus: Path, tmp_path: Path, meaning: str,
                                             cough: tuple[str, ...]) -> None:
    out = tmp_path / "idx"
    clinsearch("index", str(corpus), "--format", "jsonl", "--out", str(out),
               "--section-context", f"indication={meaning}")
    assert flags(Index.open(out), "i1")["cough"][0] == cough


def test_index_cli_refuses_an_unknown_meaning(corpus: Path, tmp_path: Path) -> None:
    done = clinsearch("index", str(corpus), "--format", "jsonl", "--out", str(tmp_path / "idx"),
                      "--section-context", "indication=reason", check=False)
    assert done.returncode == 2
    assert "unknown context 'reason'" in done.stderr and "indication" in done.stderr
    assert not (tmp_path / "idx").exists()


def test_an_index_built_before_the_flag_keeps_reading(tmp_path: Path) -> None:
    # before the flag, the shipped meaning was indication=historical: what such an index holds
    config = IndexConfig(options={"findings": {"section_context": {"indication": "historical"}}})
    old = Index.build(REPORTS, tmp_path / "old", config, progress=False)
    assert flags(old, "i1")["cough"][0] == ("historical",)
    assert members(old, "cough") == {"i3"}
    assert members(old, "cough", "historical") == {"i1", "i3"}
    assert members(old, "cough context:indication") == set()  # no error: rebuild for the flag
    assert tiered(old, "cough", "concept:context=indication") == [("i3", "stated"),
                                                                  ("i1", "historical")]


@pytest.fixture(scope="module")
def server(corpus: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("serve")
    Index.build(read_reports(corpus, "jsonl"), home / "index", progress=False)
    with serving(home / "index", home / "audit.jsonl", home / "server.log") as started:
        yield started


def test_the_api_widens_and_narrows_with_the_flag(server: Server) -> None:
    def search(**params: str) -> set[str]:
        answer = server.call("GET", "/api/search", role=None, params={"q": "cough"} | params)
        assert answer.status == 200, answer.text
        return {hit["id"] for hit in answer.json()["hits"]}

    assert search(method="concept") == {"i1", "i3"}  # i1's cough: the reason for the exam
    tiers = server.call("GET", "/api/search", role=None,
                        params={"q": "cough", "method": "concept"}).json()["tiers"]
    assert [(t["tier"], t["count"]) for t in tiers] == [("stated", 1), ("indication", 1)]
    assert search(method="concept", context="indication") == {"i1", "i3"}
    assert search(method="bm25", section="indication") == {"i1"}
    answer = server.call("POST", "/api/cohort", role=None,
                         body={"query": "cough context:indication", "level": "report"})
    assert answer.status == 200 and answer.json()["counts"]["report"] == 1
    assert [m["report_id"] for m in answer.json()["members"]] == ["i1"]
    bad = server.call("GET", "/api/search", role=None,
                      params={"q": "cough", "method": "concept", "context": "reason"})
    assert bad.status == 400 and "indication" in bad.json()["detail"]


def test_the_api_reads_the_context_a_query_states(server: Server) -> None:
    answer = server.call("GET", "/api/search", role=None,
                         params={"q": "history of pneumonia", "method": "concept"})
    assert answer.status == 200, answer.text
    assert {hit["id"] for hit in answer.json()["hits"][:2]} == {"i1", "i3"}
    for query, members in (("history of pneumonia", {"i1", "i3"}),
                           ("history of zebra stripes", {"i4"})):
        answer = server.call("POST", "/api/cohort", role=None,
                             body={"query": query, "level": "report"})
        assert answer.status == 200, answer.text
        assert {m["report_id"] for m in answer.json()["members"]} == members
