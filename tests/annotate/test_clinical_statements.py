"""Issue 15: statements that deny by describing normal, hedges, and laterality per finding."""

from __future__ import annotations

import pytest

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.lexicon import Lexicon, parse_lexicon
from clinsearch.errors import InputError


def polarity(annotator: Annotator, text: str, concept: str) -> list[str]:
    """The polarities of ``concept``'s findings in ``text``."""
    return [f.polarity for f in annotator.annotate(text) if f.concept == concept]


@pytest.mark.parametrize(
    ("text", "concept"),
    [
        ("Heart size is normal.", "cardiomegaly"),
        ("Normal cardiac silhouette.", "cardiomegaly"),
        ("Normal heart size.", "cardiomegaly"),
        ("The heart is normal in size.", "cardiomegaly"),
        ("Cardiomediastinal silhouette within normal limits.", "cardiomegaly"),
        ("The lungs are clear.", "consolidation"),
        ("Lungs clear.", "airspace_disease"),
        ("Clear airspace disease.", "airspace_disease"),
        ("Grossly clear lungs.", "consolidation"),
        ("The lungs are grossly clear of focal airspace disease, pneumothorax or pleural"
         " effusion.", "pneumothorax"),
        ("Lungs are clear of consolidation.", "consolidation"),
        ("Removal of the chest tube.", "chest_tube"),
        ("The chest tube has been removed.", "chest_tube"),
        ("Chest tube removed.", "chest_tube"),
        ("Pneumonia has resolved.", "pneumonia"),
        ("Effusion is no longer seen.", "pleural_effusion"),
    ],
)
def test_normal_and_removed_statements_deny(shipped_annotator: Annotator, text: str,
                                            concept: str) -> None:
    assert polarity(shipped_annotator, text, concept) == ["absent"]


def test_normal_statements_deny_only_what_the_lexicon_declares(
        shipped_annotator: Annotator) -> None:
    # "lungs are clear" says nothing about the heart or the pleura
    found = {f.concept for f in shipped_annotator.annotate("The lungs are clear.")}
    assert "cardiomegaly" not in found and "pleural_effusion" not in found
    # an enlarged heart beside clear lungs stays present; "not normal" denies nothing
    assert polarity(shipped_annotator, "Heart is enlarged, lungs are clear.",
                    "cardiomegaly") == ["present"]
    assert polarity(shipped_annotator, "The heart is not normal.", "cardiomegaly") == []
    # "clear" mid-sentence and a coordinated "removed" say nothing is absent
    assert polarity(shipped_annotator, "Drainage of clear pleural fluid.",
                    "pleural_effusion") == ["present"]
    assert polarity(shipped_annotator, "A nodule was found and removed.", "nodule") == [
        "present"]
    # the denied findings stand at the anatomy and state words and keep the anatomy's side
    right = [f for f in shipped_annotator.annotate("The right lung is clear.")
             if f.concept == "consolidation"]
    assert right[0].text == "lung is clear" and [m.value for m in right[0].modifiers] == [
        "right"]


STATES = ("anatomy_states:\n  links: [is]\n  states:\n"
          "    enlarged: {polarity: present, words: [enlarged]}\n")


def test_anatomy_states_are_lexicon_data_validated_with_file_and_line() -> None:
    text = ("format: clinsearch-lexicon/1\nconcepts:\n"
            "  - {id: heart, name: heart, type: anatomy, states: {enlarged: [cardiomegaly]}}\n"
            + STATES)
    with pytest.raises(InputError, match=r"x\.yaml:3.*states.*unknown concept 'cardiomegaly'"):
        parse_lexicon(text, "x.yaml")
    with pytest.raises(InputError, match=r"x\.yaml:3.*states.*unknown state 'dilated'"):
        parse_lexicon(text.replace("{enlarged:", "{dilated:"), "x.yaml")
    with pytest.raises(InputError, match=r"x\.yaml:7.*polarity.*'maybe' is not one of"):
        parse_lexicon(text.replace("polarity: present", "polarity: maybe"), "x.yaml")
    with pytest.raises(InputError, match=r"x\.yaml:3.*only an anatomy concept has states"):
        parse_lexicon(text.replace("type: anatomy", "type: finding"), "x.yaml")
    ok = parse_lexicon(text.replace("}}\n", "}}\n  - {id: cardiomegaly, name: cardiomegaly,"
                                           " type: finding}\n"), "x.yaml")
    assert ok.concepts["heart"].findings_in("enlarged") == ("cardiomegaly",)
    assert ok.anatomy_states.states["enlarged"].words == ("enlarged",)
    shipped = Lexicon.load().concepts["heart"]
    assert shipped.findings_in("normal") == shipped.findings_in("enlarged") == ("cardiomegaly",)


@pytest.mark.parametrize(
    ("text", "concept", "expected"),
    [
        ("The heart is not enlarged.", "cardiomegaly", ["absent"]),
        ("Normal heart size.", "cardiomegaly", ["absent"]),
        ("The heart is mildly enlarged.", "cardiomegaly", ["present"]),
        ("Heart size may be enlarged.", "cardiomegaly", ["uncertain"]),
        ("The kidneys are normal in size.", "hydronephrosis", ["absent"]),
        ("No dilatation of the collecting system.", "hydronephrosis", ["absent"]),
        ("Mild dilatation of the right renal collecting system.", "hydronephrosis",
         ["present"]),
        ("Enlarged liver.", "hepatomegaly", ["present"]),
        ("The liver and spleen are enlarged.", "splenomegaly", ["present"]),
        ("The liver is not enlarged.", "hepatomegaly", ["absent"]),
        # a state word said of no anatomy, or of one without that state, is nothing
        ("Large right pleural effusion.", "cardiomegaly", []),
        ("The lungs are enlarged.", "cardiomegaly", []),
        ("Clear fluid in the bladder.", "hydronephrosis", []),
        # the state is said of the anatomy before it, across a sentence never
        ("Heart size is normal. Enlarged liver.", "cardiomegaly", ["absent"]),
    ],
)
def test_anatomy_with_a_state_is_a_finding(shipped_annotator: Annotator, text: str,
                                           concept: str, expected: list[str]) -> None:
    assert polarity(shipped_annotator, text, concept) == expected


@pytest.mark.parametrize(
    ("text", "concept"),
    [
        ("There may also be small bilateral pleural effusion.", "pleural_effusion"),
        ("Question of this could be developing or resolving pneumonia.", "pneumonia"),
        ("Findings may represent edema, aspiration, or atypical infectious process.",
         "atypical_infection"),
        ("Nonspecific, findings may indicate edema or atypical infection.",
         "atypical_infection"),
    ],
)
def test_hedges_are_uncertain_not_absent(shipped_annotator: Annotator, text: str,
                                         concept: str) -> None:
    found = [f for f in shipped_annotator.annotate(text) if f.concept == concept]
    assert [f.polarity for f in found] == ["uncertain"]
    assert found[0].context == ()  # a hedge in the findings is not an indication


def test_resolving_is_present_and_improving(shipped_annotator: Annotator) -> None:
    assert polarity(shipped_annotator, "Resolving right lower lobe pneumonia.",
                    "pneumonia") == ["present"]


def test_laterality_stays_with_its_own_finding(shipped_annotator: Annotator) -> None:
    text = ("Left lower lobe pneumonia and minimal scarring or subsegmental atelectasis in the"
            " right lung base.")
    by_concept = {f.concept: f.pattern for f in shipped_annotator.annotate(text)}
    assert by_concept["pneumonia"] == "disease|present|pneumonia|left|lower lobe"
    assert by_concept["subsegmental_atelectasis"].startswith(
        "finding|uncertain|subsegmental atelectasis|right|base")  # an alternative: hedged
    assert by_concept["scarring"].startswith("finding|uncertain|scarring|right|base")
    # a finding with no side of its own still takes the shared one
    assert [f.pattern for f in shipped_annotator.annotate(
        "Scarring or atelectasis in the left base.")] == [
        "finding|uncertain|scarring|left|base", "finding|uncertain|atelectasis|left|base"]
