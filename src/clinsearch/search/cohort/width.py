"""Filter width: for a caller who sees counts only, every filter expression of a cohort query
must select at least a minimum number of reports, so that no filter (a single day, a rare type)
or combination of filters (``NOT date:..X-1 NOT date:X+1..``, two overlapping ranges) pins a
count to a few reports.

A filter expression is a filter, or NOT, AND, OR and parentheses over filter expressions only;
in an AND group mixing findings and filters, the filters together are one more. Each is
measured in reports, as ``Evaluator`` selects them.
"""

from __future__ import annotations

from collections.abc import Iterator

from clinsearch.search.cohort.evaluator import Evaluator
from clinsearch.search.cohort.syntax import (
    And,
    CohortSyntaxError,
    Filter,
    Group,
    Node,
    Not,
    Or,
)


def filter_only(node: Node) -> bool:
    """Whether ``node`` is made of filters alone (no finding, no text match)."""
    if isinstance(node, Filter):
        return True
    if isinstance(node, Not):
        return filter_only(node.operand)
    if isinstance(node, Group):
        return filter_only(node.expr)
    if isinstance(node, And | Or):
        return all(filter_only(op) for op in node.operands)
    return False


def filter_expressions(node: Node) -> Iterator[Node]:
    """Every filter expression of ``node``: each filter-only node (nested ones too) and, in an
    AND group that also holds findings, the AND of its filter-only operands."""
    if filter_only(node):
        yield node
    if isinstance(node, Not):
        yield from filter_expressions(node.operand)
    elif isinstance(node, Group):
        yield from filter_expressions(node.expr)
    elif isinstance(node, And | Or):
        if isinstance(node, And) and not filter_only(node):
            limits = tuple(op for op in node.operands if filter_only(op))
            if len(limits) > 1:
                yield And(limits)
        for op in node.operands:
            yield from filter_expressions(op)


def check_wide(evaluator: Evaluator, tree: Node, query: str, minimum: int) -> None:
    """Refuse ``query`` (parsed: ``tree``) when one of its filter expressions selects fewer
    than ``minimum`` reports, pointing at that expression's first filter."""
    for expr in filter_expressions(tree):
        if int(evaluator.units(expr, "report").sum()) < minimum:
            start = _first_filter(expr).start
            raise CohortSyntaxError(
                f"these filters select fewer than {minimum} reports; for the viewer role every"
                " filter, and every combination of filters, must select at least that many",
                query, start)


def _first_filter(node: Node) -> Filter:
    """The first filter of a filter expression."""
    if isinstance(node, Filter):
        return node
    if isinstance(node, Not):
        return _first_filter(node.operand)
    if isinstance(node, Group):
        return _first_filter(node.expr)
    assert isinstance(node, And | Or)
    return _first_filter(node.operands[0])
