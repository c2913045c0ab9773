"""What differs between the SQL engines clinsearch compiles to: DuckDB and Spark SQL.

Values are never SQL text: a caller binds each value and gets its placeholder back
(``Dialect.param`` names one), so the same condition is written for either engine.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

Bind = Callable[[object], str]  # binds one value, returns its placeholder


@dataclass(frozen=True, slots=True)
class Dialect:
    """Parameter marks and the array functions of one SQL engine."""

    name: str
    mark: str  # the prefix of a named parameter
    has_all: str  # format(column, array): the array column holds every value of array
    has_any: str  # format(column, array): the array column holds one of the values
    array: str  # format(items)
    mods: str  # format(pattern column): the modifier values of a finding pattern

    def param(self, name: str) -> str:
        """The placeholder of parameter ``name``."""
        return f"{self.mark}{name}"

    def array_of(self, values: Sequence[object], bind: Bind) -> str:
        """An array literal of bound values."""
        return self.array.format(", ".join(bind(v) for v in values))


def in_list(column: str, values: Sequence[object], bind: Bind) -> str:
    """``column IN (...)`` of bound values (an empty list matches nothing)."""
    return f"{column} IN ({', '.join(bind(v) for v in values) or 'NULL'})"


DUCKDB = Dialect("duckdb", "$", "list_has_all({0}, {1})", "list_has_any({0}, {1})",
                 "[{0}]", "string_split({0}, '|')[4:]")
SPARK = Dialect("spark", ":", "size(array_except({1}, {0})) = 0", "arrays_overlap({0}, {1})",
                "array({0})", "slice(split({0}, '[|]'), 4, 2147483647)")
