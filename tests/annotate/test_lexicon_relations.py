"""Modifier relations are lexicon data: validated on load, with file, line and field."""

from __future__ import annotations

import pytest

from clinsearch.annotate.lexicon import RELATED_CREDIT, Lexicon, dump_lexicon, parse_lexicon
from clinsearch.errors import InputError
from clinsearch.search.concept.modifier_relations import modifier_categories, modifier_credit

BASE = """format: clinsearch-lexicon/1
name: t
version: "1"
concepts:
  - {id: effusion, name: effusion, type: finding}
modifiers:
  laterality: {right: [right], left: [left], bilateral: [bilateral]}
  location: {base: [base], lower lobe: [lower lobe]}
modifier_relations:
"""


def test_relations_load_symmetric_and_drive_the_credit() -> None:
    text = BASE + "  - [right, bilateral]\n  - {values: [base, lower lobe], credit: 0.3}\n"
    lexicon = parse_lexicon(text, "lex.yaml")
    assert lexicon.modifier_relations == {
        ("right", "bilateral"): RELATED_CREDIT, ("bilateral", "right"): RELATED_CREDIT,
        ("base", "lower lobe"): 0.3, ("lower lobe", "base"): 0.3,
    }
    vocabulary = modifier_categories(lexicon)
    assert modifier_credit("base", ["lower lobe"], "location", vocabulary) == 0.3
    assert modifier_credit("left", ["bilateral"], "laterality", vocabulary) == 0.0
    again = parse_lexicon(dump_lexicon(lexicon), "x")
    assert again.modifier_relations == lexicon.modifier_relations


def test_a_lexicon_without_relations_has_none() -> None:
    lexicon = parse_lexicon(BASE.replace("modifier_relations:\n", ""), "lex.yaml")
    assert modifier_credit("base", ["lower lobe"], "location", modifier_categories(lexicon)) == 0


def test_shipped_lexicon_holds_the_chest_relations() -> None:
    relations = Lexicon.load().modifier_relations
    assert relations[("base", "lower lobe")] == relations[("bilateral", "right")] == RELATED_CREDIT


@pytest.mark.parametrize(
    ("items", "where"),
    [
        ("  - [right, upper]\n", "lex.yaml:10: field 'modifier_relations': 'upper' is not in"),
        ("  - [right, base]\n", "lex.yaml:10: field 'modifier_relations': 'right' (laterality)"),
        ("  - [right]\n", "lex.yaml:10: field 'modifier_relations': expected two different"),
        ("  - {values: [right, left], credit: 2}\n",
         "lex.yaml:10: field 'credit': must be between"),
        ("  - {values: [right, left], weight: 1}\n", "lex.yaml:10: field 'weight': unknown key"),
        ("  - [right, left]\n  - [left, right]\n",
         "lex.yaml:11: field 'modifier_relations': 'left'"),
    ],
)
def test_bad_relations_name_file_line_and_field(items: str, where: str) -> None:
    with pytest.raises(InputError) as info:
        parse_lexicon(BASE + items, "lex.yaml")
    assert str(info.value).startswith(where)
