"""Issue 26: the trigger of every finding kept in the findings table, sections that give context,
and indexes written before the trigger column (their findings read with no trigger)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import Report
from clinsearch.errors import InputError
from clinsearch.index.findings import FINDINGS_FILE
from clinsearch.search.cohort import Cohort

REPORTS = (
    Report(id="h1", patient_id="p1", visit_id="v1",
           text="CLINICAL HISTORY: Fever, evaluate for pneumonia. History of reflux.\n"
                "IMPRESSION: No acute disease."),
    Report(id="h2", patient_id="p2", visit_id="v2",
           text="CLINICAL HISTORY: Cardiomegaly.\nIMPRESSION: Right lower lobe pneumonia."),
    Report(id="h3", patient_id="p3", visit_id="v3",
           text="FINDINGS: Left lower lobe opacity. Please correlate clinically for pneumonia."),
    Report(id="h4", patient_id="p4", visit_id="v4",
           text="INDICATION: Pneumonia.\nIMPRESSION: Atelectasis or pneumonia."),
)


def report_findings(index: Index, report_id: str) -> list[tuple[str, str, tuple, object]]:
    """(concept, polarity, context, trigger) of each finding of a report, as the view reads it."""
    return [(f.finding.concept, f.finding.polarity, f.finding.context, f.finding.trigger)
            for f in index.report(report_id).findings]


@pytest.fixture
def built(tmp_path: Path) -> Index:
    return Index.build(REPORTS, tmp_path / "idx", progress=False)


def test_the_table_keeps_each_cue_and_the_section_context(built: Index) -> None:
    h3 = report_findings(built, "h3")
    assert [(c, p) for c, p, _, _ in h3] == [("opacity", "present"), ("pneumonia", "uncertain")]
    assert h3[0][3] is None
    trigger = h3[1][3]
    text = built.report("h3").report.text
    assert (trigger.rule, trigger.category) == ("correlate clinically for", "POSSIBLE_EXISTENCE")
    assert text[trigger.start:trigger.end] == trigger.text == "correlate clinically for"
    # the clinical history is why the study was done: its mentions are not the report's findings
    h1 = {c: (p, ctx, t) for c, p, ctx, t in report_findings(built, "h1")}
    assert h1["pneumonia"][:2] == ("uncertain", ("hypothetical", "indication"))
    assert h1["pneumonia"][2].rule == "evaluate for"  # the cue, not the section, decided it
    history = next(f.finding for f in built.report("h2").findings
                   if f.finding.concept == "cardiomegaly")
    assert (history.polarity, history.context) == ("present", ("indication",))
    assert (history.trigger.rule, history.trigger.category, history.trigger.text,
            history.trigger.start) == ("section", "SECTION", "indication", None)


def test_cohorts_count_only_what_the_report_itself_finds(built: Index) -> None:
    cohort = Cohort(built)
    members = {m.report_id for m in cohort.members("pneumonia", "report")}
    assert members == {"h2"}  # not the indications, the recommendation or the alternative
    assert cohort.counts("pneumonia context:any")["report"] == 2  # h2, and h4's indication
    assert cohort.counts("cardiomegaly")["report"] == 0
    assert cohort.counts("cardiomegaly context:indication")["report"] == 1
    assert cohort.counts("cardiomegaly context:historical")["report"] == 0


def test_a_section_meaning_can_be_changed_per_index(tmp_path: Path) -> None:
    config = IndexConfig(options={"findings": {"section_context": {"indication": "none"}}})
    index = Index.build(REPORTS, tmp_path / "idx", config, progress=False)
    assert Cohort(index).counts("cardiomegaly")["report"] == 1
    with pytest.raises(InputError, match="unknown context 'later'"):
        IndexConfig(options={"findings": {"section_context": {"indication": "later"}}}).make()


def drop_trigger_column(index_path: Path) -> int:
    """Rewrite every findings file without its trigger column, as indexes were written before
    it existed (the rest of the file as it was); the number of files rewritten."""
    files = sorted(index_path.glob(f"gen-*/segments/*/{FINDINGS_FILE}"))
    for path in files:
        table = pq.read_table(path)
        path.unlink()  # a generation's files are hard links: never write through them
        pq.write_table(table.drop_columns(["trigger"]), path)
    return len(files)


def test_an_index_written_before_triggers_still_reads(built: Index, tmp_path: Path) -> None:
    path = built.path
    built.close()
    assert drop_trigger_column(path)
    old = Index.open(path)
    assert pq.read_schema(old.generation.files("findings")[0]).names[-1] != "trigger"
    h3 = report_findings(old, "h3")
    assert [(c, p, t) for c, p, _, t in h3] == [("opacity", "present", None),
                                                 ("pneumonia", "uncertain", None)]
    assert {m.report_id for m in Cohort(old).members("pneumonia", "report")} == {"h2"}
    # new reports added to an old index have triggers; both kinds read together
    old.add([Report(id="h5", patient_id="p5", visit_id="v5", text="IMPRESSION: No pneumothorax.")],
            progress=False)
    old.reopen()
    [(concept, polarity, _, trigger)] = report_findings(old, "h5")
    assert (concept, polarity, trigger.rule) == ("pneumothorax", "absent", "no")
    assert report_findings(old, "h3")[1][3] is None
    assert {m.report_id for m in Cohort(old).members("pneumonia", "report")} == {"h2"}
    old.optimize()  # merging old and new segments keeps both kinds of rows
    old.reopen()
    assert report_findings(old, "h5")[0][3].rule == "no"
    assert report_findings(old, "h3")[1][3] is None
