"""Issue 26: a de-identification mask right before a finding may hide its qualifier.

IU X-ray writes XXXX for a hidden word, which may be "likely", "small" or "no": a coder cannot
tell the finding is stated, so it reads uncertain, the mask its trigger. A mask that is a noun
of its own or stands after the finding changes nothing, and a negation before it wins.
"""

from __future__ import annotations

import pytest

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.context_rules import expand_pattern, parse_rule_file, radiology_rules
from clinsearch.errors import InputError

MASK_RULE = "mask before a finding"


def reading(annotator: Annotator, text: str) -> dict[str, str]:
    """Each non-anatomy concept's polarity in ``text``."""
    return {f.concept: f.polarity for f in annotator.annotate(text) if f.type != "anatomy"}


@pytest.mark.parametrize(
    ("text", "concept", "trigger"),
    [
        ("Findings include XXXX small right pleural effusion.", "pleural_effusion",
         "XXXX small right"),
        ("XXXX XXXX right pneumothorax.", "pneumothorax", "XXXX XXXX right"),
        ("Lateral view shows XXXX bilateral effusions.", "pleural_effusion", "XXXX bilateral"),
        ("Lungs are clear. XXXX mild cardiomegaly.", "cardiomegaly", "XXXX mild"),
        ("XXXX right and XXXX left effusions.", "pleural_effusion", "XXXX right and XXXX left"),
    ],
)
def test_a_mask_before_a_finding_makes_it_uncertain_with_the_mask_as_trigger(
        shipped_annotator: Annotator, text: str, concept: str, trigger: str) -> None:
    [finding] = [f for f in shipped_annotator.annotate(text) if f.concept == concept]
    assert finding.polarity == "uncertain"
    assert finding.trigger is not None
    assert (finding.trigger.rule, finding.trigger.text) == (MASK_RULE, trigger)
    assert finding.trigger.text.startswith("XXXX")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # the mask is a noun of its own, or inside the finding's name
        ("Costophrenic XXXX blunting is seen on the right.",
         {"blunted_costophrenic_angle": "present"}),
        ("Hilar lymph XXXX enlargement.", {"lymphadenopathy": "present"}),
        ("XXXX and soft tissues are unremarkable; right pleural effusion.",
         {"pleural_effusion": "present"}),
        # a mask right before the finding's name hides a describing word ("median", "patchy")
        ("Status post XXXX sternotomy.", {"sternotomy": "present"}),
        ("Left basilar XXXX opacity.", {"opacity": "present"}),
        ("XXXX cardiomegaly.", {"cardiomegaly": "present"}),
        # the mask after the finding
        ("Left pleural effusion XXXX.", {"pleural_effusion": "present"}),
        ("Pneumothorax on the right XXXX in size.", {"pneumothorax": "present"}),
        # other words than the finding's own modifiers stand between
        ("XXXX seen with a small pneumothorax.", {"pneumothorax": "present"}),
        # after an indefinite article the mask is the finding's adjective, never a "no"
        ("There is a XXXX posterior effusion.", {"pleural_effusion": "present"}),
        ("An XXXX XXXX left pneumothorax is seen.", {"pneumothorax": "present"}),
        # a side stated before "and" states the finding; the mask hides the other side's word
        ("There are tiny left and XXXX right effusions.", {"pleural_effusion": "present"}),
    ],
)
def test_a_mask_that_is_no_qualifier_changes_nothing(
        shipped_annotator: Annotator, text: str, expected: dict[str, str]) -> None:
    assert reading(shipped_annotator, text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("No XXXX effusion.", {"pleural_effusion": "absent"}),
        ("No XXXX pleural effusion.", {"pleural_effusion": "absent"}),
        ("No right and XXXX left effusions.", {"pleural_effusion": "absent"}),
        ("There is no XXXX left effusion or pneumothorax.",
         {"pleural_effusion": "absent", "pneumothorax": "absent"}),
    ],
)
def test_a_negation_before_the_mask_wins(
        shipped_annotator: Annotator, text: str, expected: dict[str, str]) -> None:
    assert reading(shipped_annotator, text) == expected
    assert all(f.trigger is not None and f.trigger.text.lower() == "no"
               for f in shipped_annotator.annotate(text) if f.type != "anatomy")


def test_the_shipped_masks_are_declared_once_as_data() -> None:
    assert radiology_rules().masks == ("xxxx",)
    rules = [r for r in radiology_rules().rules if r["literal"] == MASK_RULE]
    assert rules and all(r["pattern"][0] == {"LOWER": {"IN": ["xxxx"]}} for r in rules)


def test_another_de_identifiers_token_is_a_mask_by_data_alone() -> None:
    text = ("masks: [zzzz, '[redacted]']\nrules:\n"
            "  - {literal: m, category: POSSIBLE_EXISTENCE, direction: FORWARD, max_scope: 1,\n"
            "     pattern: [{MASK: true}, {LOWER: {IN: [small]}, OP: '?'}]}\n"
            "  - {literal: r, category: POSSIBLE_EXISTENCE, direction: FORWARD,\n"
            "     pattern: [{MASK: true, LOWER: {IN: [likely]}}, {LOWER: represents}]}\n")
    masked, representing = parse_rule_file(text, "rules.yaml").rules
    assert expand_pattern(masked["pattern"]) == ["[redacted]", "[redacted] small", "zzzz",
                                                 "zzzz small"]
    assert expand_pattern(representing["pattern"]) == [
        "[redacted] represents", "likely represents", "zzzz represents"]


RULE = "  - {literal: m, category: POSSIBLE_EXISTENCE, pattern: [%s]}\n"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("rules:\n" + RULE % "{MASK: true}",
         "rules.yaml:2: field 'pattern': MASK needs the file's `masks` list"),
        ("masks: [xxxx]\nrules:\n" + RULE % "{MASK: yes please}",
         "rules.yaml:3: field 'pattern': a MASK token is {MASK: true}"),
        ("masks: [xxxx]\nrules:\n" + RULE % "{MASK: true, ORTH: x}",
         "rules.yaml:3: field 'pattern': a MASK token is {MASK: true}"),
        ("masks: [two words]\nrules:\n" + RULE % "{MASK: true}",
         "rules.yaml:1: field 'masks': must be a list of single words"),
        ("masks: []\nrules:\n" + RULE % "{MASK: true}",
         "rules.yaml:1: field 'masks': must be a list of single words"),
    ],
)
def test_a_bad_mask_names_file_line_and_field(text: str, where: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_rule_file(text, "rules.yaml")
    assert where in str(caught.value)


@pytest.mark.parametrize(
    ("text", "concept", "rule"),
    [
        ("Differential diagnosis is XXXX and includes pneumonia.", "pneumonia", "suggesting"),
        ("Probable XXXX pneumothorax.", "pneumothorax", "suggesting"),
        ("Clinical correlation for XXXX pneumonia.", "pneumonia", "clinical correlation for"),
    ],
)
def test_a_mask_does_not_cut_a_hedge_short(
        shipped_annotator: Annotator, text: str, concept: str, rule: str) -> None:
    [finding] = [f for f in shipped_annotator.annotate(text) if f.concept == concept]
    assert finding.polarity == "uncertain"
    assert finding.trigger is not None and finding.trigger.rule == rule


@pytest.mark.parametrize("text", ["XXXX heart size is within normal limits.",
                                  "XXXX normal heart size."])
def test_a_mask_before_anatomy_leaves_its_state_alone(
        shipped_annotator: Annotator, text: str) -> None:
    assert reading(shipped_annotator, text) == {"cardiomegaly": "absent"}


# Issue 38: a mask before a list of findings, or before a "combination of" them, hedges the
# list as a whole; a negation still wins, and what is not in the list is left alone.
@pytest.mark.parametrize(
    ("text", "expected", "rule"),
    [
        ("XXXX atelectasis, pneumonia, or effusion.",
         {"atelectasis": "uncertain", "pneumonia": "uncertain", "pleural_effusion": "uncertain"},
         "mask before a list"),
        ("Hazy lung bases, XXXX combination of edema, infiltrate and effusions.",
         {"pulmonary_edema": "uncertain", "infiltrate": "uncertain",
          "pleural_effusion": "uncertain"}, "mask combination of"),
        ("XXXX combination of scarring and atelectasis with a small left effusion.",
         {"scarring": "uncertain", "atelectasis": "uncertain", "pleural_effusion": "present"},
         "mask combination of"),
        ("XXXX bibasilar atelectasis and small bilateral effusions.",
         {"atelectasis": "uncertain", "pleural_effusion": "uncertain"}, MASK_RULE),
    ],
)
def test_a_mask_before_a_list_hedges_the_list(
        shipped_annotator: Annotator, text: str, expected: dict[str, str], rule: str) -> None:
    findings = [f for f in shipped_annotator.annotate(text) if f.type != "anatomy"]
    assert {f.concept: f.polarity for f in findings} == expected
    assert all(f.trigger is not None and f.trigger.rule == rule
               and f.trigger.category == "MASKED_QUALIFIER"
               for f in findings if f.polarity == "uncertain")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # one finding after a bare mask: the mask hides a describing word
        ("XXXX atelectasis.", {"atelectasis": "present"}),
        # the list ends at a word that joins no list ("with", "in")
        ("XXXX opacity in the right lower lobe with a calcified granuloma.",
         {"opacity": "present", "calcified_granuloma": "present"}),
        # devices are no findings a hidden hedge is about ("median sternotomy wires")
        ("XXXX sternotomy wires and surgical clips.",
         {"sternotomy_wires": "present", "surgical_instruments": "present"}),
        # a negation before the mask wins
        ("No XXXX combination of atelectasis, infiltrate, effusions.",
         {"atelectasis": "absent", "infiltrate": "absent", "pleural_effusion": "absent"}),
        ("No XXXX atelectasis, consolidation or effusion.",
         {"atelectasis": "absent", "consolidation": "absent", "pleural_effusion": "absent"}),
    ],
)
def test_what_a_mask_leaves_outside_its_list(
        shipped_annotator: Annotator, text: str, expected: dict[str, str]) -> None:
    assert reading(shipped_annotator, text) == expected


LIST_RULE = ("masks: [xxxx]\nrules:\n  - {literal: m, category: MASKED_QUALIFIER, "
             "pattern: [{MASK: true}],\n     metadata: {list: %s}}\n")


@pytest.mark.parametrize(
    ("value", "where"),
    [
        ("{joins: [or]}", "rules.yaml:4: field 'min_items': missing"),
        ("{min_items: 0, joins: [or]}", "rules.yaml:4: field 'min_items': must be a whole"),
        ("{min_items: 2, joins: [or], kinds: [x]}", "rules.yaml:4: field 'kinds': unknown list"),
        ("{min_items: 2, joins: [or], types: [illness]}",
         "rules.yaml:4: field 'types': unknown concept type"),
        ("[or]", "rules.yaml:4: field 'list': expected a mapping"),
    ],
)
def test_a_bad_list_cue_names_file_line_and_field(value: str, where: str) -> None:
    with pytest.raises(InputError) as caught:
        parse_rule_file(LIST_RULE % value, "rules.yaml")
    assert str(caught.value).startswith(where)
