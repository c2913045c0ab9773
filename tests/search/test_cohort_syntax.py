"""The cohort language parser: precedence, phrases, scopes, filters and error positions."""

from __future__ import annotations

import pytest

from clinsearch.search.cohort.syntax import (
    And,
    CohortSyntaxError,
    Filter,
    Group,
    Not,
    Or,
    Term,
    TextMatch,
    parse,
)


def test_and_binds_tighter_than_or_and_not_tighter_than_and() -> None:
    tree = parse("pneumonia OR effusion AND NOT pneumothorax")
    assert isinstance(tree, Or)
    left, right = tree.operands
    assert left == Term("pneumonia", 0, 9)
    assert isinstance(right, And)
    assert isinstance(right.operands[1], Not)
    assert right.operands[1].operand == Term("pneumothorax", 30, 42)


def test_keywords_are_case_insensitive_and_words_form_phrases() -> None:
    tree = parse("right lower lobe pneumonia and not no pneumothorax")
    assert isinstance(tree, And)
    assert tree.operands[0] == Term("right lower lobe pneumonia", 0, 26)
    assert tree.operands[1] == Not(Term("no pneumothorax", 35, 50), 31)


def test_quoted_phrase_keeps_keywords_inside() -> None:
    tree = parse('pneumonia AND NOT "pleural effusion or edema"')
    assert tree.operands[1].operand.text == "pleural effusion or edema"


def test_adjacent_parts_are_anded() -> None:
    tree = parse('pneumonia type:"CHEST XRAY" section:impression')
    assert isinstance(tree, And)
    assert tree.operands[1] == Filter("type", "chestxray", start=10, end=27)  # folded
    assert tree.operands[2] == Filter("section", "impression", start=28, end=46)


@pytest.mark.parametrize(
    ("scope_text", "unit"),
    [("same sentence", "sentence"), ("in same report", "report"), ("IN SAME VISIT", "visit"),
     ("same patient", "patient")],
)
def test_scopes_after_parentheses(scope_text: str, unit: str) -> None:
    tree = parse(f"(pneumonia AND effusion) {scope_text} OR cardiomegaly")
    assert isinstance(tree, Or)
    group = tree.operands[0]
    assert isinstance(group, Group)
    assert group.scope == unit
    assert isinstance(group.expr, And)


def test_plain_parentheses_have_no_scope() -> None:
    tree = parse("(a OR b) AND c")
    assert isinstance(tree, And)
    assert tree.operands[0] == Group(Or((Term("a", 1, 2), Term("b", 6, 7))), None, 0, 8)


@pytest.mark.parametrize(
    ("text", "low", "high"),
    [("2020-01-01..2020-12-31", "2020-01-01", "2020-12-31"), ("2020-01-01..", "2020-01-01", ""),
     ("..2020-12-31", "", "2020-12-31"), ("2020-05-01", "2020-05-01", "2020-05-01")],
)
def test_date_ranges(text: str, low: str, high: str) -> None:
    flt = parse(f"date:{text}")
    assert isinstance(flt, Filter)
    assert (flt.low, flt.high) == (low, high)


def test_text_match() -> None:
    assert parse('text:"port catheter"') == TextMatch("port catheter", 0, 20)


@pytest.mark.parametrize(
    ("query", "column", "fragment"),
    [
        ("pneumonia AND", 14, "query ended"),
        ("pneumonia AND OR effusion", 15, "before 'OR'"),
        ("(pneumonia OR effusion", 23, "expected ')'"),
        ("pneumonia)", 10, "unmatched ')'"),
        ('pneumonia AND "pleural effusion', 15, "unterminated quote"),
        ("()", 2, "empty parentheses"),
        ("pneumonia AND colour:red", 15, "unknown filter 'colour:'"),
        ("date:2020-13-01..2020-12-31", 6, "bad date '2020-13-01'"),
        ("date:2020-01-01..2020-1-31", 18, "bad date '2020-1-31'"),
        ("date:2021-01-01..2020-01-01", 6, "starts after it ends"),
        ("(pneumonia) same ward", 18, "after 'same'"),
        ("   ", 1, "empty"),
        ("NOT", 4, "query ended"),
    ],
)
def test_syntax_errors_point_at_the_offending_character(
    query: str, column: int, fragment: str
) -> None:
    with pytest.raises(CohortSyntaxError) as info:
        parse(query)
    err = info.value
    assert fragment in err.message
    assert err.position + 1 == column
    lines = str(err).splitlines()
    assert lines[0].startswith(f"cohort query, column {column}:")
    assert lines[1] == f"  {query}"
    assert lines[2] == " " * (2 + column - 1) + "^"
