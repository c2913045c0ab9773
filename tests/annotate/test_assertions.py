"""Issue 26: what each mention asserts, as a coder reads it (the issue's sentences and more).

A coder does not code "possible pneumonia", "atelectasis or pneumonia", "correlate clinically for
pneumonia" or "rule out pneumonia": each is uncertain (and an indication also hypothetical).
"""

from __future__ import annotations

import pytest

from clinsearch.annotate.annotator import Annotator


def reading(annotator: Annotator, text: str) -> dict[str, tuple[str, tuple[str, ...]]]:
    """Each concept's (polarity, context) in ``text``."""
    return {f.concept: (f.polarity, f.context) for f in annotator.annotate(text)}


UNCERTAIN = ("uncertain", ())
PRESENT = ("present", ())
ABSENT = ("absent", ())
INDICATION = ("uncertain", ("hypothetical",))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Left basilar atelectasis or pneumonia.",
         {"atelectasis": UNCERTAIN, "pneumonia": UNCERTAIN}),
        ("Findings may represent either atelectasis or pneumonia.",
         {"atelectasis": UNCERTAIN, "pneumonia": UNCERTAIN}),
        ("Either atelectasis, infiltrate or pneumonia.",
         {"atelectasis": UNCERTAIN, "infiltrate": UNCERTAIN, "pneumonia": UNCERTAIN}),
        ("Atelectasis versus pneumonia.", {"atelectasis": UNCERTAIN, "pneumonia": UNCERTAIN}),
        ("Atelectasis vs pneumonia in the left base.",
         {"atelectasis": UNCERTAIN, "pneumonia": UNCERTAIN}),
        ("Atelectasis vs. pneumonia.", {"atelectasis": UNCERTAIN, "pneumonia": UNCERTAIN}),
        ("Cardiomegaly versus pericardial effusion.",
         {"cardiomegaly": UNCERTAIN, "pericardial_effusion": UNCERTAIN}),
        ("Atelectasis and/or pneumonia.", {"atelectasis": UNCERTAIN, "pneumonia": UNCERTAIN}),
        # a finding coordinated before the alternatives is asserted
        ("Cardiomegaly and atelectasis or pneumonia.",
         {"cardiomegaly": PRESENT, "atelectasis": UNCERTAIN, "pneumonia": UNCERTAIN}),
        ("Opacity possibly due to atelectasis or pneumonia.",
         {"opacity": PRESENT, "atelectasis": UNCERTAIN, "pneumonia": UNCERTAIN}),
        # a list of negated items after "no" stays negated
        ("No pneumothorax or pleural effusion.",
         {"pneumothorax": ABSENT, "pleural_effusion": ABSENT}),
        ("No focal consolidation, pneumothorax, or large pleural effusion.",
         {"consolidation": ABSENT, "pneumothorax": ABSENT, "pleural_effusion": ABSENT}),
        ("Without effusion and/or pneumothorax.",
         {"pleural_effusion": ABSENT, "pneumothorax": ABSENT}),
        # "either side" names no alternative
        ("Small pleural effusions on either side.", {"pleural_effusion": PRESENT}),
    ],
)
def test_alternatives_are_each_uncertain(shipped_annotator: Annotator, text: str,
                                         expected: dict) -> None:
    assert reading(shipped_annotator, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Opacity which is most likely atelectasis.",
         {"opacity": PRESENT, "atelectasis": UNCERTAIN}),
        ("Suspect small patch of infiltrate.", {"infiltrate": UNCERTAIN}),
        ("We suspect pneumonia.", {"pneumonia": UNCERTAIN}),
        ("There is suggestion of pneumonia.", {"pneumonia": UNCERTAIN}),
        ("This may well represent pneumonia.", {"pneumonia": UNCERTAIN}),
        ("This may well be pneumonia.", {"pneumonia": UNCERTAIN}),
        ("These findings can be seen with pneumonia.", {"pneumonia": UNCERTAIN}),
        ("Pneumonia is a consideration.", {"pneumonia": UNCERTAIN}),
        ("Infection is also a possibility.", {"pneumonia": UNCERTAIN}),  # the lexicon's infection
        ("Please correlate clinically for pneumonia.", {"pneumonia": UNCERTAIN}),
        ("Clinical correlation for pneumonia is recommended.", {"pneumonia": UNCERTAIN}),
        ("Pneumonia is difficult to exclude.", {"pneumonia": UNCERTAIN}),
        ("Difficult to exclude pneumonia.", {"pneumonia": UNCERTAIN}),
        ("Recommend follow-up to exclude pneumonia.", {"pneumonia": UNCERTAIN}),
        ("Right lower lobe opacity XXXX representing pneumonia.",
         {"opacity": PRESENT, "pneumonia": UNCERTAIN}),
        ("Opacity likely representing atelectasis.",
         {"opacity": PRESENT, "atelectasis": UNCERTAIN}),
        # the likelier alternative after a negation is a hedge, not a negation
        ("Not typical of pneumonia, most likely atelectasis.",
         {"pneumonia": ABSENT, "atelectasis": UNCERTAIN}),
        # an assertion without a hedge stays present
        ("Right lower lobe pneumonia.", {"pneumonia": PRESENT}),
        ("There is pneumothorax.", {"pneumothorax": PRESENT}),
    ],
)
def test_hedges_and_recommendations_are_uncertain(shipped_annotator: Annotator, text: str,
                                                  expected: dict) -> None:
    assert reading(shipped_annotator, text) == expected


@pytest.mark.parametrize(
    ("text", "concept"),
    [
        ("Rule - out pneumonia.", "pneumonia"),
        ("Rule-out pneumonia.", "pneumonia"),
        ("Rule out pneumonia.", "pneumonia"),
        ("R/O pneumonia.", "pneumonia"),
        ("r / o pneumonia.", "pneumonia"),
        ("Evaluate for pneumonia.", "pneumonia"),
        ("Fever, evaluate for pneumonia.", "pneumonia"),
        ("Patient being evaluated for pneumonia.", "pneumonia"),
        ("Child is being evaluated for pneumothorax.", "pneumothorax"),
        ("Evaluate pneumonia.", "pneumonia"),
    ],
)
def test_indications_are_hypothetical(shipped_annotator: Annotator, text: str,
                                      concept: str) -> None:
    assert reading(shipped_annotator, text)[concept] == INDICATION


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Resolution of pneumonia with persistent pleural effusion.",
         {"pneumonia": ABSENT, "pleural_effusion": PRESENT}),
        ("Pneumonia has resolved with residual atelectasis.",
         {"pneumonia": ABSENT, "atelectasis": PRESENT}),
        ("No pneumothorax in this patient with a history of emphysema.",
         {"pneumothorax": ABSENT, "emphysema": ("present", ("historical",))}),
        ("No focal consolidation in this child with asthma.",
         {"consolidation": ABSENT, "asthma": PRESENT}),
    ],
)
def test_scopes_end_at_the_words_that_end_them(shipped_annotator: Annotator, text: str,
                                               expected: dict) -> None:
    assert reading(shipped_annotator, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Atelectasis with or without superimposed infection.",
         {"atelectasis": PRESENT, "pneumonia": UNCERTAIN}),
        ("Atelectasis with or without superimposed pneumonia.",
         {"atelectasis": PRESENT, "pneumonia": UNCERTAIN}),
        ("Opacity without pneumothorax.", {"opacity": PRESENT, "pneumothorax": ABSENT}),
        # the technique denies nothing
        ("CT without contrast shows a small pneumothorax.", {"pneumothorax": PRESENT}),
    ],
)
def test_with_or_without_is_uncertain(shipped_annotator: Annotator, text: str,
                                      expected: dict) -> None:
    assert reading(shipped_annotator, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Borderline enlarged heart.", {"cardiomegaly": UNCERTAIN}),
        ("Borderline heart size.", {"cardiomegaly": UNCERTAIN}),
        ("Mild cardiomegaly.", {"cardiomegaly": PRESENT}),
        # a prominent heart is not an enlarged one
        ("Prominence of the cardiac silhouette.", {"heart": PRESENT}),
        ("The cardiac silhouette is prominent but stable.", {"heart": PRESENT}),
        ("Prominent cardiac silhouette.", {"heart": PRESENT}),
        ("In the appropriate clinical setting, this is compatible with pneumonia.",
         {"pneumonia": UNCERTAIN}),
        # what is seen is stated; the reading of it "consistent with" is a hedge a coder
        # does not code
        ("Right lower lobe infiltrate consistent with pneumonia.",
         {"infiltrate": PRESENT, "pneumonia": UNCERTAIN}),
        ("Hyperinflated lungs, compatible with COPD.",
         {"hyperinflation": PRESENT, "copd": UNCERTAIN}),
        ("Findings indicative of a small pneumothorax.", {"pneumothorax": UNCERTAIN}),
        ("No findings consistent with pneumonia.", {"pneumonia": ABSENT}),
        ("Patchy right lower lobe opacities, XXXX infectious infiltrate.",
         {"opacity": PRESENT, "pneumonia": UNCERTAIN}),
        ("Atypical infection is another consideration.", {"atypical_infection": UNCERTAIN}),
        # the hedge after a long subject still reaches it
        ("An infection superimposed on the changes seen on the previous examinations would be a"
         " consideration.", {"pneumonia": UNCERTAIN}),
        ("A pneumonia developing at the left base behind the heart would be a possibility.",
         {"pneumonia": UNCERTAIN}),
        ("It would be difficult to completely exclude a superimposed pneumonia.",
         {"pneumonia": UNCERTAIN}),
        ("Lower lobe opacities which are most likely due to pleural effusions.",
         {"opacity": PRESENT, "pleural_effusion": UNCERTAIN}),
        ("Right upper lobe cavity, consistent with prior tuberculous infection.",
         {"cavity": PRESENT, "tuberculosis": ("present", ("historical",)),
          "pneumonia": ("present", ("historical",))}),
    ],
)
def test_hedging_modifiers_conditionals_masks_and_past_causes(
        shipped_annotator: Annotator, text: str, expected: dict) -> None:
    assert reading(shipped_annotator, text) == expected


@pytest.mark.parametrize(
    ("text", "concept"),
    [
        ("Metallic foreign body in the left axilla, which may represent a bullet fragment.",
         "foreign_body"),
        ("Displaced left 5th rib fracture and probable nondisplaced left 6th rib fracture.",
         "rib_fracture"),
        ("Patchy airspace opacities, possibly due to airspace disease or atelectasis.",
         "airspace_disease"),
    ],
)
def test_a_hedged_reading_leaves_what_was_seen_asserted(
        shipped_annotator: Annotator, text: str, concept: str) -> None:
    seen, reading = [f for f in shipped_annotator.annotate(text) if f.concept == concept]
    assert (seen.polarity, reading.polarity) == ("present", "uncertain")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("There is tortuosity and/or ectasia of the descending aorta.", {"present"}),
        ("Mild left pleural effusion or small right pleural effusion.", {"present"}),
        ("Scarring or atelectasis at the right base.", {"uncertain"}),
        ("Tortuosity or XXXX of the aorta.", {"uncertain"}),  # the other alternative unknown
        ("Acute or subacute fracture of the left clavicle.", {"present"}),  # its age in doubt
        ("Small versus moderate right pleural effusion.", {"present"}),  # its size in doubt
        ("No acute or chronic fracture.", {"absent"}),
    ],
)
def test_alternatives_of_one_concept_or_of_its_modifiers_assert_it(
        shipped_annotator: Annotator, text: str, expected: set[str]) -> None:
    assert {f.polarity for f in shipped_annotator.annotate(text) if f.type != "anatomy"} == (
        expected)


def test_a_hedging_modifier_is_the_trigger(shipped_annotator: Annotator) -> None:
    [finding] = shipped_annotator.annotate("Borderline enlarged heart.")
    assert (finding.trigger.rule, finding.trigger.category, finding.trigger.text) == (
        "severity=borderline", "HEDGING_MODIFIER", "Borderline")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Heart size at the upper limits of normal, mild aortic tortuosity.",
         {"tortuous_aorta": PRESENT}),
        ("Cardiac silhouette top normal with a small left pleural effusion.",
         {"pleural_effusion": PRESENT}),
        ("The heart is near top normal in size with calcification of the aorta.",
         {"aortic_calcification": PRESENT}),
        ("Borderline cardiomegaly with a small right effusion.",
         {"cardiomegaly": UNCERTAIN, "pleural_effusion": PRESENT}),
        ("Heart size normal, aortic tortuosity.",  # "normal" ends at the comma
         {"cardiomegaly": ABSENT, "tortuous_aorta": PRESENT}),
        ("Normal heart size and pulmonary vascularity.",
         {"cardiomegaly": ABSENT, "pulmonary_vascular_congestion": ABSENT}),
        ("Small right effusion, borderline enlargement of the heart.",
         {"pleural_effusion": PRESENT, "cardiomegaly": UNCERTAIN}),
    ],
)
def test_a_hedging_modifier_or_normal_reads_only_its_own_segment(
        shipped_annotator: Annotator, text: str, expected: dict) -> None:
    found = reading(shipped_annotator, text)
    assert {c: found.get(c) for c in expected} == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mildly enlarged cardiac silhouette; cardiomegaly versus pericardial effusion.",
         ["uncertain", "uncertain"]),
        ("Small left pleural effusion, possible right pleural effusion.",
         ["present", "uncertain"]),  # another side is another finding
        ("Enlarged heart. Cardiomegaly versus pericardial effusion.",
         ["present", "uncertain"]),  # another sentence says its own
        ("Enlarged cardiac silhouette, which may represent cardiomegaly from volume overload.",
         ["present", "uncertain"]),  # the hedged reading offered for what is seen
    ],
)
def test_a_sentence_that_hedges_a_concept_hedges_its_plain_mentions(
        shipped_annotator: Annotator, text: str, expected: list[str]) -> None:
    concept = "cardiomegaly" if "heart" in text.lower() or "cardiac" in text else (
        "pleural_effusion")
    assert [f.polarity for f in shipped_annotator.annotate(text)
            if f.concept == concept] == expected
