"""Cohorts over an index of several segments with deletion marks answer as a fresh build."""

from __future__ import annotations

from dataclasses import astuple
from pathlib import Path

import pytest

from clinsearch import Index
from clinsearch.annotate.finding import POLARITIES
from clinsearch.corpus.model import Report
from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path
from clinsearch.index import finding_match
from clinsearch.index.concept_postings import PostedFindings
from clinsearch.index.finding_match import FindingSpec, finding_matcher
from clinsearch.search.cohort import Cohort, members_csv_rows
from clinsearch.search.concept.ranking import PolarityOptions

QUERIES = (  # the first 36 sample reports are mostly normal: negated findings are common
    '"no pleural effusion" AND NOT "degenerative change"',
    '"degenerative change" OR "no cardiomegaly" section:impression',
    'text:"no effusion" AND NOT "degenerative change"',  # a phrase, its polarity read
    '("mild degenerative change" OR "no pneumothorax") SAME SENTENCE',  # a modifier
    "degenerative change of the thoracic spine",  # a site
    '"no cardiomegaly" date:2000-01-01..2030-12-31 type:"cxr pa/lateral"',
    '"no pneumothorax" type:xray',  # a warning: no such type
)


@pytest.fixture(scope="module")
def sample() -> list[Report]:
    return list(read_reports(sample_reports_path(), SAMPLE_FORMAT))[:36]


def answers(index: Index) -> list[object]:
    """Counts, warnings and members with their evidence at every level, per query."""
    cohort = Cohort(index)
    return [(query, cohort.counts(query), cohort.warnings(query),
             {level: [astuple(m) for m in cohort.members(query, level)]
              for level in ("patient", "visit", "report", "sentence")})
            for query in QUERIES]


CONTEXTS = (  # findings with context flags, which the first sample reports lack
    "History of pneumonia in the right lower lobe. Evaluate for pneumothorax.",
    "Family history of lung cancer. History of pneumonia.",
)


@pytest.fixture(scope="module")
def segmented(tmp_path_factory: pytest.TempPathFactory, sample: list[Report]
              ) -> tuple[Index, list[Report], set[str]]:
    """The sample and two reports with context flags in four segments, three reports deleted;
    the reports and the deleted ones' ids."""
    reports = [*sample, *(Report(id=f"ctx{i}", text=text, patient_id=f"ctx{i}")
                          for i, text in enumerate(CONTEXTS))]
    index = Index.build(reports[:12], tmp_path_factory.mktemp("cohort") / "idx", progress=False)
    for part in (reports[12:24], reports[24:36], reports[36:]):
        index.add(part, progress=False)
    gone = {reports[2].id, reports[13].id, reports[30].id}
    index.delete(sorted(gone))
    assert len(index.generation.segments) > 1 and len(index.generation.deleted_keys()) == 3
    return index, reports, gone


def test_segments_and_deletion_marks_give_the_cohorts_of_a_fresh_build(
    tmp_path: Path, segmented: tuple[Index, list[Report], set[str]]
) -> None:
    index, reports, gone = segmented
    kept = [r for r in reports if r.id not in gone]
    seen = answers(index)
    assert seen == answers(Index.build(kept, tmp_path / "fresh", progress=False))
    assert all(counts["report"] for _, counts, _, _ in seen[:-1]) and seen[-1][2]
    shown = {m[1] for *_, members in seen for m in members["report"]}  # evidence reports
    assert shown and not gone & shown


def test_concept_postings_and_findings_table_match_the_same_findings(
    segmented: tuple[Index, list[Report], set[str]],
) -> None:
    """The cohort matcher reads a term's findings from the concept postings; the findings
    table (the source where an index has no postings) gives the same sentences for every
    concept, polarity, context, modifier and site, deleted reports left out of both."""
    index = segmented[0]
    posted = finding_matcher(index)
    assert isinstance(posted.rows, PostedFindings)
    table = index.component("findings").matcher(index.lookup.sentence_rows)
    rows = index.component("findings").table(["concept", "modifiers"]).to_pylist()
    concepts = sorted({r["concept"] for r in rows})
    values = {r["concept"]: m["value"] for r in rows for m in r["modifiers"]}
    specs = [FindingSpec("x", ("no such concept",), POLARITIES)]
    for i, concept in enumerate(concepts):
        other = (concepts[(i + 1) % len(concepts)], concepts[(i + 2) % len(concepts)])
        word = values.get(concept, "right")
        specs += [FindingSpec(concept, (concept,), ("present",)),
                  FindingSpec(concept, (concept, other[0]), POLARITIES, contexts=None),
                  FindingSpec(concept, (concept,), ("absent",), contexts=("historical",)),
                  FindingSpec(concept, (concept,), POLARITIES, required_context=("historical",)),
                  FindingSpec(concept, (concept,), POLARITIES, modifiers=(word,)),
                  FindingSpec(concept, (concept,), POLARITIES, sites=((other, (word,)),))]
    found: set[str] = set()
    for spec in specs:
        sentences = posted.sentences(spec)
        assert sentences.tolist() == table.sentences(spec).tolist(), spec
        if len(sentences):
            found |= {"modifiers"} if spec.modifiers else {"sites"} if spec.sites else {
                "required"} if spec.required_context else {spec.polarities[0]}
    assert found == {"present", "absent", "modifiers", "sites", "required"}, found


def test_a_matcher_keeps_its_answers_read_only_and_within_its_bound(
    segmented: tuple[Index, list[Report], set[str]], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A cohort asks for the same terms in its counts, members and wider tiers: the matcher
    answers a spec once, never lets a caller change a kept answer, and keeps at most
    KEPT_ANSWERS of them (the least recently asked go first)."""
    monkeypatch.setattr(finding_match, "KEPT_ANSWERS", 2)
    index = segmented[0]
    matcher = finding_matcher(index)
    concepts = index.component("findings").table(["concept"]).column("concept").to_pylist()
    specs = [FindingSpec(c, (c,), POLARITIES, contexts=None) for c in sorted(set(concepts))[:3]]
    first = matcher.sentences(specs[0])
    assert len(first) and matcher.sentences(specs[0]) is first
    with pytest.raises(ValueError):
        first[0] = -1
    for spec in specs[1:]:
        matcher.sentences(spec)
    assert list(matcher._answers) == specs[1:]
    again = matcher.sentences(specs[0])
    assert again is not first and again.tolist() == first.tolist()


def test_each_member_shows_the_trigger_of_the_finding_it_was_counted_for(
    tmp_path: Path,
) -> None:
    """A reviewer sees why a member counts: the cue of a negated, hedged or in-context finding
    (none for one stated now), in the members, their CSV and the page's data."""
    reports = [Report(id="neg", text="FINDINGS: There is no pneumothorax.", patient_id="p1"),
               Report(id="pos", text="FINDINGS: Large right pneumothorax.", patient_id="p2"),
               Report(id="hedge", text="FINDINGS: Possible pneumonia at the left base.",
                      patient_id="p3"),
               Report(id="hist", text="History of pneumonia. Lungs are clear.", patient_id="p4")]
    cohort = Cohort(Index.build(reports, tmp_path / "idx", progress=False))
    shown = {m.report_id: m.trigger for m in cohort.members("no pneumothorax", "report")}
    assert shown == {"neg": '"no" (NEGATED_EXISTENCE, rule "no")'}
    assert [m.trigger for m in cohort.members("pneumothorax", "report")] == [""]
    wider = cohort.with_options(PolarityOptions(include_uncertain=True, context=("historical",)))
    shown = {m.report_id: m.trigger for m in wider.members("pneumonia", "report")}
    assert shown == {"hedge": '"Possible" (POSSIBLE_EXISTENCE, rule "possible")',
                     "hist": '"History" (HISTORICAL, rule "history")'}
    rows = list(members_csv_rows(cohort.members("no pneumothorax", "patient"), "patient"))
    assert rows[0][rows[0].index("matched") + 1] == "trigger"
    assert rows[1][rows[0].index("trigger")] == '"no" (NEGATED_EXISTENCE, rule "no")'
