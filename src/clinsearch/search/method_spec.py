"""Search methods as data: each declares its parameters, and one spec syntax names a method.

A method spec is ``NAME`` or ``NAME:key=value,key=value`` (``bm25:whole_report=true``,
``hybrid:methods=bm25,dense,weights=bm25=1,dense=2``). Items are split at commas; an item that
does not start with one of the method's parameter names continues the list before it, so list
values need no quoting. ``search --method``, ``eval --method`` and ``Index.search(method=...)``
all read this syntax, and every option, however given, is checked against the declaration.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from clinsearch.errors import ClinsearchError, InputError, LimitError

Kind = Literal["bool", "int", "float", "str", "path", "list", "weights", "object"]
_TRUE = {"true", "yes", "1", "on"}
_FALSE = {"false", "no", "0", "off"}


@dataclass(frozen=True)
class Param:
    """One parameter of a search method: its type, allowed values, default and help.

    ``list`` values are comma-separated names, ``weights`` comma-separated ``name=number``
    pairs; both reach the method as that text; an ``object`` is an instance of ``of`` (given
    through the Python API, not in a spec). ``needs`` names the index component the
    parameter requires; ``what`` is how errors name a bad value (default: the name).
    ``minimum`` and ``maximum`` bound a number, ``max_items`` a list (``clinsearch.limits``);
    a value outside them is a ``LimitError``.
    """

    name: str
    kind: Kind
    help: str
    default: Any = None
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    max_items: int | None = None
    needs: str | None = None
    what: str = ""
    of: type | None = None  # the class an ``object`` parameter takes (Python API only)

    def convert(self, value: Any, method: str) -> Any:
        """``value`` as this parameter's type, or a ClinsearchError naming method and option."""
        if value is None:
            return None
        converted = _CONVERT[self.kind](self, value, method)
        items = converted.split(",") if self.kind == "list" else [converted]
        if self.choices and any(item not in self.choices for item in items):
            bad = next(item for item in items if item not in self.choices)
            raise ClinsearchError(
                f"unknown {self.what or self.name} {bad!r}; choose one of {', '.join(self.choices)}"
            )
        if self.minimum is not None and converted < self.minimum:
            raise LimitError(
                f"{method}: {self.name} must be at least {self.minimum:g} (got {converted})"
            )
        if self.maximum is not None and converted > self.maximum:
            raise LimitError(
                f"{method}: {self.name} must be at most {self.maximum:,g} (got {converted})"
            )
        if self.max_items is not None and len(items) > self.max_items:
            raise LimitError(
                f"{method}: {self.name} takes at most {self.max_items} names (got {len(items)})"
            )
        return converted

    def _fail(self, method: str, value: Any, expected: str) -> ClinsearchError:
        return ClinsearchError(
            f"method {method!r}: option {self.name!r} must be {expected} (got {value!r})"
        )


def _bool(p: Param, value: Any, method: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise p._fail(method, value, "true or false")


def _int(p: Param, value: Any, method: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    try:
        return int(str(value).strip())
    except ValueError:
        raise p._fail(method, value, "a whole number") from None


def _float(p: Param, value: Any, method: str) -> float:
    number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    try:
        number = float(str(value).strip()) if number is None else float(number)
    except ValueError:
        raise p._fail(method, value, "a number") from None
    if not math.isfinite(number):
        raise p._fail(method, value, "a finite number")
    return number


def _str(p: Param, value: Any, method: str) -> str:
    if not isinstance(value, str | Path):
        raise p._fail(method, value, "text")
    return str(value)


def _list(p: Param, value: Any, method: str) -> str:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise p._fail(method, value, "comma-separated names")
    return ",".join(i.strip() for i in items if i.strip())


def _weights(p: Param, value: Any, method: str) -> str:
    if isinstance(value, Mapping):
        value = ",".join(f"{k}={v}" for k, v in value.items())
    if not isinstance(value, str):
        raise p._fail(method, value, "NAME=NUMBER pairs, comma-separated")
    return ",".join(i.strip() for i in value.split(",") if i.strip())


def _object(p: Param, value: Any, method: str) -> Any:
    if p.of is None or not isinstance(value, p.of):
        raise p._fail(method, value, f"a {p.of.__name__ if p.of else 'Python'} object")
    return value


_CONVERT: dict[Kind, Callable[[Param, Any, str], Any]] = {
    "bool": _bool, "int": _int, "float": _float, "str": _str, "path": _str, "list": _list,
    "weights": _weights, "object": _object,
}


@dataclass(frozen=True)
class Method:
    """A registered search method: ``factory(index, **options) -> Retriever``, its parameters
    (as data), what it does, and the index components it needs."""

    factory: Callable[..., Any]
    params: tuple[Param, ...]
    help: str = ""
    needs: tuple[str, ...] = ()

    def param(self, name: str) -> Param | None:
        """The parameter called ``name``, if the method has one."""
        return next((p for p in self.params if p.name == name), None)


@dataclass(frozen=True)
class MethodSpec:
    """A method and its options; ``label`` (the spec as written) names the run."""

    label: str
    method: str
    options: dict[str, Any] = field(default_factory=dict)

    def with_options(self, **options: Any) -> MethodSpec:
        """This spec plus ``options`` (None values dropped); the label is unchanged."""
        given = {k: v for k, v in options.items() if v is not None}
        return MethodSpec(self.label, self.method, self.options | given)


def parse_spec(
    spec: str, params_of: Callable[[str], tuple[Param, ...] | None], field_name: str = "method"
) -> MethodSpec:
    """Parse ``NAME[:key=value,...]``; ``params_of(name)`` gives a method's parameters (None
    for an unknown method, left for the registry to report). Values stay text; the registry
    converts them to each parameter's type."""
    text = spec.strip()
    name, _, rest = text.partition(":")
    name = name.strip()
    if not name:
        raise InputError(f"empty method name in {spec!r}", field=field_name)
    params = {p.name: p for p in params_of(name) or ()}
    options: dict[str, Any] = {}
    last: str | None = None
    for item in filter(None, (p.strip() for p in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        continues = last is not None and params.get(last) is not None and (
            (params[last].kind == "list" and not eq)
            or (params[last].kind == "weights" and eq and key not in params)
        )
        if continues:
            options[last] = f"{options[last]},{item}"  # type: ignore[index]
            continue
        if not eq or not key:
            raise InputError(
                f"option {item!r} of method {spec!r} is not key=value", field=field_name
            )
        if key in options:
            raise InputError(f"option {key!r} given twice in {spec!r}", field=field_name)
        options[key] = value.strip()
        last = key
    return MethodSpec(text, name, options)
