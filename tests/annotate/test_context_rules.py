"""Radiology ConText rules: bare "free", postcedent normal limits, and differentials."""

from __future__ import annotations

import pytest

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.finding import Finding


def by_concept(findings: list[Finding]) -> dict[str, Finding]:
    return {f.concept: f for f in findings}


def polarities(annotator: Annotator, text: str, targets: tuple[str, ...] = ()) -> dict[str, str]:
    return {f.concept: f.polarity for f in annotator.annotate(text, targets)}


def test_bare_free_neither_negates_nor_ends_a_negation(annotator: Annotator) -> None:
    air = ("free intraperitoneal air",)
    text = "No visible free intraperitoneal air under the diaphragm."
    assert polarities(annotator, text, air) == {"free intraperitoneal air": "absent"}
    assert polarities(annotator, "Free intraperitoneal air.", air) == {
        "free intraperitoneal air": "present"
    }
    assert polarities(annotator, "Effusion, free layering.") == {"pleural_effusion": "present"}
    # "free of" is still a negation cue
    assert polarities(annotator, "Lungs are free of consolidation.")["consolidation"] == "absent"


def test_free_air_sentence_with_the_shipped_lexicon(shipped_annotator: Annotator) -> None:
    text = "No visible free intraperitoneal air under the diaphragm."
    assert polarities(shipped_annotator, text) == {"pneumoperitoneum": "absent"}


@pytest.mark.parametrize(
    "text",
    [
        "Pulmonary vascular engorgement appears within limits of normal.",
        "Heart size and vascular engorgement appear within normal limits.",
        "Vascular engorgement is within the limits of normal.",
        "Vascular engorgement is normal.",
    ],
)
def test_normal_limits_after_a_finding_negate_it(annotator: Annotator, text: str) -> None:
    assert polarities(annotator, text, ("vascular engorgement",))["vascular engorgement"] == (
        "absent"
    )


def test_normal_limits_reach_only_the_finding_right_before_them(annotator: Annotator) -> None:
    found = polarities(annotator, "Heart is enlarged, lungs are normal.")
    assert found == {"cardiomegaly": "present", "lung": "present"}
    found = polarities(annotator, "Cardiomegaly with lungs within normal limits.")
    assert found == {"cardiomegaly": "present", "lung": "present"}


def test_normal_anatomy_is_not_absent(annotator: Annotator) -> None:
    assert polarities(annotator, "The lungs are within normal limits.") == {"lung": "present"}


def test_versus_hedges_its_alternatives_not_a_coordinated_finding(annotator: Annotator) -> None:
    found = polarities(annotator, "Cardiomegaly and small left effusion versus atelectasis.")
    assert found == {
        "cardiomegaly": "present",
        "pleural_effusion": "uncertain",
        "atelectasis": "uncertain",
    }
    found = polarities(annotator, "Basilar opacity, atelectasis versus pneumonia.")
    assert found == {"opacity": "present", "atelectasis": "uncertain", "pneumonia": "uncertain"}


@pytest.mark.parametrize(
    "text",
    [
        "Opacity possibly due to atelectasis or pneumonia.",
        "Differential considerations include atelectasis or pneumonia.",
        "The differential could include atelectasis or pneumonia.",
        "Opacity could represent atelectasis versus pneumonia.",
        "Considerations would include atelectasis or pneumonia.",
        "Consider atelectasis or pneumonia.",
        "Question atelectasis or pneumonia.",
        "Atelectasis, or pneumonia is not excluded.",
        "Atelectasis or pneumonia is not entirely excluded.",
        "Cannot exclude atelectasis or pneumonia.",
        "Cannot rule out atelectasis or pneumonia.",
    ],
)
def test_differential_diagnoses_are_uncertain(annotator: Annotator, text: str) -> None:
    found = polarities(annotator, text)
    assert (found["atelectasis"], found["pneumonia"]) == ("uncertain", "uncertain")
    assert found.get("opacity", "present") == "present"


def test_in_the_differential_looks_back(annotator: Annotator) -> None:
    assert polarities(annotator, "Pneumonia is in the differential.") == {"pneumonia": "uncertain"}


def test_what_a_view_could_hide_is_hypothetical(annotator: Annotator) -> None:
    [f] = annotator.annotate("Overlying soft tissue could obscure a small pneumothorax.")
    assert (f.concept, f.polarity, f.context) == ("pneumothorax", "present", ("hypothetical",))


def test_cannot_exclude_hedges_with_the_shipped_lexicon(shipped_annotator: Annotator) -> None:
    text = "Tortuous aorta, cannot exclude ascending aortic aneurysm."
    assert polarities(shipped_annotator, text) == {
        "tortuous_aorta": "present",
        "aortic_aneurysm": "uncertain",
    }


@pytest.mark.parametrize(
    ("text", "polarity"),
    [
        ("It is unclear whether there is a pneumothorax.", "uncertain"),
        ("It is not clear if this represents a pneumothorax.", "uncertain"),
        ("Suspicion for pneumothorax at the apex.", "uncertain"),
        ("Raising the possibility of a pneumothorax.", "uncertain"),
        ("This does not exclude a pneumothorax.", "uncertain"),
        ("This doesn't rule out a pneumothorax.", "uncertain"),
        ("A small pneumothorax cannot be excluded.", "uncertain"),
        ("A small pneumothorax can not be completely ruled out.", "uncertain"),
        ("Difficult to exclude a small pneumothorax.", "uncertain"),
        ("A small pneumothorax is suspected.", "uncertain"),
        ("Limited lateral view, small apical pneumothorax suspected.", "uncertain"),
        ("Tiny pneumothorax questioned; repeat film advised.", "uncertain"),
        ("Suspected pneumothorax.", "uncertain"),
        ("No pneumothorax.", "absent"),
        ("The pneumothorax has resolved.", "absent"),
        ("Small apical pneumothorax.", "present"),
    ],
)
def test_hedges_are_uncertain_not_negated(annotator: Annotator, text: str, polarity: str) -> None:
    assert polarities(annotator, text) == {"pneumothorax": polarity}


def test_suspected_reaches_back_only_from_the_clause_end(annotator: Annotator) -> None:
    text = "Cardiomegaly with suspected pneumothorax."
    assert polarities(annotator, text) == {"cardiomegaly": "present", "pneumothorax": "uncertain"}


def test_can_be_excluded_is_no_hedge(annotator: Annotator) -> None:
    assert polarities(annotator, "Pneumothorax can be excluded.")["pneumothorax"] == "present"


def test_a_terminator_ends_a_backward_cue_with_a_short_scope(annotator: Annotator) -> None:
    text = "Airspace opacity with costophrenic angle blunting which is not seen on the lateral."
    assert polarities(annotator, text) == {"opacity": "present", "costophrenic_blunting": "present"}
    text = "Costophrenic angle blunting is not seen on the lateral view."
    assert polarities(annotator, text) == {"costophrenic_blunting": "absent"}


def test_the_likelier_alternative_after_a_negation_is_hedged_not_negated(
        annotator: Annotator) -> None:
    text = "This does not look like pneumonia, and more likely represents a granuloma."
    assert polarities(annotator, text) == {"pneumonia": "absent", "granuloma": "uncertain"}
    text = "This does not look like pneumonia, and is more consistent with a granuloma."
    assert polarities(annotator, text) == {"pneumonia": "absent", "granuloma": "uncertain"}


@pytest.mark.parametrize(("text", "historical"), [
    ("Three day history of cough and shortness of breath.", False),
    ("A 2-day history of fever.", False),
    ("Patient with a 1 week history of wheezing.", False),
    ("Four week history of cough.", True),
    ("History of pneumonia.", True),
    ("3-year-old with history of asthma.", True),
])
def test_a_short_duration_of_the_present_illness_is_no_past_history(
    shipped_annotator: Annotator, text: str, historical: bool
) -> None:
    """ConText reads as historical what began more than two weeks before the study."""
    findings = shipped_annotator.annotate(text)
    assert findings
    assert {"historical" in f.context for f in findings} == {historical}
    assert {f.polarity for f in findings} == {"present"}
