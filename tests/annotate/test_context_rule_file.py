"""The ConText rule file is validated like the lexicon: bad rules name file, line and field."""

from __future__ import annotations

import pytest

from clinsearch.annotate.context_rules import parse_rule_file, radiology_rules, section_contexts
from clinsearch.errors import InputError


def test_shipped_rules_validate() -> None:
    rules = radiology_rules()
    assert "evaluate for" in rules.replace_defaults
    assert all(r["category"] and r["literal"] for r in rules.rules)
    assert dict(rules.sections) == {"indication": "indication"}
    assert dict(rules.terminating_types) == {"NEGATED_EXISTENCE": ("PROBABLE_EXISTENCE",)}


def test_section_meanings_can_be_changed() -> None:
    assert section_contexts() == {"indication": "indication"}
    assert section_contexts({"indication": "historical"}) == {"indication": "historical"}
    assert section_contexts({"indication": "none", "History": "historical"}) == {
        "history": "historical"}
    with pytest.raises(InputError, match=r"section context later.*unknown context"):
        section_contexts({"later": "soon"})


GOOD = "{literal: no sign of, category: NEGATED_EXISTENCE, direction: FORWARD}"


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("rules:\n  - " + GOOD + "\n  - {literal: x, category: NEGATED_EXISTENCE, direction: UP}\n",
         "rules.yaml:3: field 'direction': unknown direction 'UP'"),
        ("rules:\n  - {literal: x, direction: FORWARD}\n",
         "rules.yaml:2: field 'category': missing"),
        ("rules:\n  - {literal: x, category: negated}\n",
         "rules.yaml:2: field 'category': must be an UPPER_CASE name"),
        ("rules:\n  - {literal: x, category: NEGATED_EXISTENCE, max_scope: -1}\n",
         "rules.yaml:2: field 'max_scope': must be a whole number"),
        ("rules:\n  - {literal: x, category: NEGATED_EXISTENCE, scope: 3}\n",
         "rules.yaml:2: field 'scope': unknown rule key"),
        ("rule:\n  - " + GOOD + "\n", "rules.yaml:1: field 'rule': unknown key"),
        ("rules: [\n", "rules.yaml:2: malformed YAML"),
        ("rules:\n  - {literal: x, category: NEGATED_EXISTENCE, pattern: [LOWER]}\n",
         "rules.yaml:2: field 'pattern': expected a mapping"),
        ("sections:\n  indication: later\nrules:\n  - " + GOOD + "\n",
         "rules.yaml:2: field 'sections': unknown context 'later'"),
        ("terminating_types:\n  NEGATED_EXISTENCE: [probable]\nrules:\n  - " + GOOD + "\n",
         "rules.yaml:2: field 'terminating_types': categories must be UPPER_CASE names"),
    ],
)
def test_bad_rules_name_file_line_and_field(text: str, where: str) -> None:
    with pytest.raises(InputError) as info:
        parse_rule_file(text, "rules.yaml")
    assert str(info.value).startswith(where)
