"""Issues 26 and 38: the whole report is read after its sentences. A finding the findings
section states present reads uncertain when the impression hedges it; a finding one section
states and the other denies reads uncertain on both sides, as does a bare acute finding beside
a normal impression; a differential in the next sentence hedges the reading before it; each
change names its rule and the other sentence; cohorts count what the report concludes."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from clinsearch import Index
from clinsearch.annotate.context_rules import parse_rule_file
from clinsearch.corpus.model import Report
from clinsearch.errors import InputError
from clinsearch.index.findings import FINDINGS_FILE, _chunks
from clinsearch.search.cohort import Cohort
from clinsearch.search.concept.ranking import PolarityOptions


def report(rid: str, findings: str, impression: str) -> Report:
    return Report(id=rid, patient_id=f"p{rid}", visit_id=f"v{rid}",
                  text=f"FINDINGS: {findings}\nIMPRESSION: {impression}")


REPORTS = (
    report("hedged", "There are small bilateral pleural effusions.",
           "Possible small bilateral pleural effusions."),
    report("differential", "The heart is markedly enlarged.",
           "Cardiomegaly versus pericardial effusion."),
    report("dropped", "There is pneumothorax. Lungs are clear.",
           "No acute cardiopulmonary disease."),
    report("denied", "There is pneumonia.", "No pneumonia."),
    # a described finding was observed: a normal impression leaves it, a denial contradicts it
    report("described", "Small residual left apical pneumothorax. Right upper lobe pneumonia.",
           "No pneumonia. No acute cardiopulmonary abnormality."),
    # the impression states what the findings section denies
    report("reversed", "No pleural effusion.", "Small left pleural effusion."),
    # a denied side is another finding, and a site's normal state denies no finding placed
    report("sides", "Small left pleural effusion.", "No right pleural effusion."),
    report("site_normal", "The left lung is clear.",
           "Right lower lobe pneumonia."),
    # an anatomy word is no finding: "lungs" stated and "clear lungs" concluded disagree on nothing
    report("anatomy", "The lungs are well expanded.", "No acute pulmonary findings."),
    # a differential in the next sentence offers alternatives to the reading before it
    report("differential_next", "Patchy right lower lobe opacity, representing pneumonia. "
           "Atelectasis or aspiration are also possible.", "As above."),
    # ... not to what the sentence before it saw, nor to a finding it names again
    report("same_named", "Left lower lobe pneumonia. Pneumonia or edema could also represent "
           "this finding.", "As above."),
    # kept: the impression agrees, denies only a degree, or says nothing of a chronic finding
    report("agreed", "Small left pleural effusion.", "Small left pleural effusion."),
    report("degree", "Small left pleural effusion.", "No large pleural effusion."),
    report("chronic", "The heart is enlarged.", "No acute cardiopulmonary disease."),
    report("silent", "Small right pneumothorax.", "Interval placement of a chest tube."),
    report("mixed", "Left lower lobe pneumonia.",
           "Left lower lobe pneumonia. Possible right lower lobe pneumonia."),
    # a de-identification mask may hide a hedge or a "no": a masked mention alone states
    # nothing, but it is no hedge of the radiologist's over what the findings section states
    report("masked", "There is a small right pleural effusion.",
           "XXXX XXXX right pleural effusion."),
    report("masked_only", "Heart size is normal.", "XXXX bilateral pleural effusions."),
)


@pytest.fixture(scope="module")
def built_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("conclusion") / "idx"
    Index.build(REPORTS, path, progress=False)
    return path


@pytest.fixture(scope="module")
def built(built_path: Path) -> Index:
    return Index.open(built_path)


def members(index: Index, query: str, include_uncertain: bool = False) -> set[str]:
    options = PolarityOptions(include_uncertain=include_uncertain)
    return {m.report_id for m in Cohort(index, options).members(query, "report")}


def test_cohorts_count_what_the_impression_concludes(built: Index) -> None:
    assert members(built, "pleural effusion") == {"agreed", "degree", "masked", "sides"}
    assert members(built, "cardiomegaly") == {"chronic"}
    assert members(built, "pneumothorax") == {"silent", "described"}
    assert members(built, "pneumonia") == {"mixed", "same_named", "site_normal"}
    # a contradiction is in no cohort of either reading
    for rid, finding in (("dropped", "pneumothorax"), ("denied", "pneumonia"),
                         ("reversed", "pleural effusion")):
        assert rid not in members(built, finding) | members(built, f"no {finding}")
    assert "sides" in members(built, "no pleural effusion")
    assert "denied" in members(built, "pneumonia", include_uncertain=True)


def reading(index: Index, rid: str, concept: str) -> list[tuple[str, str | None, str | None]]:
    """Each mention of ``concept`` in report ``rid``: polarity, trigger rule and words."""
    return [(f.finding.polarity, f.finding.trigger and f.finding.trigger.rule,
             f.finding.trigger and f.finding.trigger.text)
            for f in index.report(rid).findings if f.finding.concept == concept]


def test_a_contradiction_reads_uncertain_with_the_other_sentence_as_trigger(built: Index) -> None:
    rule = "findings and impression disagree"
    assert reading(built, "denied", "pneumonia") == [
        ("uncertain", rule, "No pneumonia."), ("uncertain", rule, "There is pneumonia.")]
    assert reading(built, "reversed", "pleural_effusion") == [
        ("uncertain", rule, "Small left pleural effusion."),
        ("uncertain", rule, "No pleural effusion.")]
    assert reading(built, "described", "pneumonia")[0] == (
        "uncertain", rule, "No pneumonia.")
    assert all(f.finding.trigger is None or f.finding.trigger.category != "CONCLUSION"
               for f in built.report("anatomy").findings)
    assert reading(built, "dropped", "pneumothorax") == [
        ("uncertain", "impression says nothing acute", "No acute cardiopulmonary")]


def test_a_differential_in_the_next_sentence_hedges_the_reading_before_it(built: Index) -> None:
    text = built.report("differential_next").report.text
    [(polarity, rule, words)] = reading(built, "differential_next", "pneumonia")
    assert (polarity, rule, words) == ("uncertain", "differential in the next sentence",
                                       "also possible")
    [pneumonia] = [f.finding for f in built.report("differential_next").findings
                   if f.finding.concept == "pneumonia"]
    assert text[pneumonia.trigger.start:pneumonia.trigger.end] == "also possible"
    assert pneumonia.trigger.category == "DIFFERENTIAL"
    assert [p for p, _, _ in reading(built, "differential_next", "opacity")] == ["present"]
    assert reading(built, "same_named", "pneumonia")[0] == ("present", None, None)


def test_the_impression_is_the_trigger(built: Index, built_path: Path) -> None:
    text = built.report("hedged").report.text
    [stated] = [f.finding for f in built.report("hedged").findings
                if f.finding.concept == "pleural_effusion"
                and f.finding.start < text.index("IMPRESSION")]
    assert stated.polarity == "uncertain"
    trigger = stated.trigger
    assert (trigger.rule, trigger.category) == ("impression hedges", "CONCLUSION")
    assert text[trigger.start:trigger.end] == trigger.text == (
        "Possible small bilateral pleural effusions.")
    assert trigger.start > text.index("IMPRESSION")
    dropped = built.report("dropped")
    [pneumothorax] = [f.finding for f in dropped.findings if f.finding.concept == "pneumothorax"]
    assert pneumothorax.polarity == "uncertain"
    assert pneumothorax.trigger.text == "No acute cardiopulmonary"
    # the stored pattern, which concept search matches, says the concluded polarity too
    [table] = [pq.read_table(p) for p in built_path.glob(f"gen-*/segments/*/{FINDINGS_FILE}")]
    rows = table.filter(pc.equal(table["report_id"], "dropped")).to_pylist()
    assert [r["pattern"] for r in rows if r["concept"] == "pneumothorax"] == [
        "finding|uncertain|pneumothorax"]


def test_reports_stay_whole_in_annotation_chunks() -> None:
    keys = [1, 1, 1, 2, 2, 3, 4, 4, 4, 4, 5]
    batches = [pa.RecordBatch.from_pydict({"report_key": keys[i:i + 2]})
               for i in range(0, len(keys), 2)]
    chunks = [c.column("report_key").to_pylist() for c in _chunks(batches, 4)]
    assert [k for c in chunks for k in c] == keys
    assert chunks == [[1, 1, 1], [2, 2, 3], [4, 4, 4, 4], [5]]
    for chunk, after in pairwise(chunks):
        assert chunk[-1] != after[0]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("conclusion:\n  section: impression\nrules: []\n",
         "rules.yaml:2: field 'governs': missing"),
        ("conclusion:\n  section: impression\n  governs: [findings]\n  denies: [x]\nrules: []\n",
         "rules.yaml:4: field 'denies': unknown conclusion key"),
        ("conclusion: impression\nrules: []\n",
         "rules.yaml:1: field 'conclusion': expected a mapping"),
        ("conclusion:\n  section: impression\n  governs: [findings]\n"
         "  differential: [also possible]\nrules: []\n",
         "rules.yaml:2: field 'differential_types': missing"),
        ("conclusion:\n  section: impression\n  governs: [findings]\n"
         "  differential: [also possible]\n  differential_types: [disease, illness]\nrules: []\n",
         "rules.yaml:5: field 'differential_types': unknown concept type"),
    ],
)
def test_a_bad_conclusion_names_file_line_and_field(text: str, where: str) -> None:
    with pytest.raises(InputError) as info:
        parse_rule_file(text, "rules.yaml")
    assert str(info.value).startswith(where)


def test_parts_conclude_as_a_local_build(built_path: Path) -> None:
    """The parts a Spark build computes read each report's conclusion as a local build does."""
    from clinsearch.index.parts import PartOptions, compute_part

    options = PartOptions(findings=True, dense=False, lexicon=None, model=None,
                          findings_batch=256, dense_batch=None)
    part = compute_part(list(enumerate(REPORTS)), options)["findings"]
    [local] = [pq.read_table(p) for p in built_path.glob(f"gen-*/segments/*/{FINDINGS_FILE}")]
    columns = ["concept", "polarity", "pattern"]
    assert part.select(columns).to_pylist() == local.select(columns).to_pylist()
    assert "uncertain" in part.column("polarity").to_pylist()
