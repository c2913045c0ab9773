"""Command-line flags made from the search methods' declared parameters, one per parameter.

Each parameter declared in ``search.method_params`` (every method's own and those every method
takes) becomes ``--name-with-dashes`` with the help, default and bounds declared there, so the
CLI never restates them. The library names parameters in its errors; the CLI shows them as
these flags (``method_errors_as_flags``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from clinsearch.cli import as_flags
from clinsearch.errors import ClinsearchError
from clinsearch.search.method_params import METHOD_PARAMS, WRAPPERS
from clinsearch.search.method_spec import Param

# set through --polarity, which ``polarity_options`` maps onto these
NOT_FLAGS = frozenset({"polarity", "polarity_filter"})
_TYPES: dict[str, type] = {"int": int, "float": float, "path": Path}
EVERY_METHOD = "every method"


@dataclass(frozen=True)
class MethodFlag:
    """One parameter as a flag, and the methods that take it."""

    param: Param
    methods: tuple[str, ...]

    @property
    def flag(self) -> str:
        """The flag as typed: ``--rerank-depth`` for ``rerank_depth``."""
        return "--" + self.param.name.replace("_", "-")

    @property
    def help(self) -> str:
        """Which methods take it, the declared help (parameters named as flags) and default."""
        param = self.param
        default = "" if param.default is None or param.kind == "bool" else (
            f" Default: {param.default}.")
        text = re.sub(r"\b[a-z]+_[a-z_]+\b", lambda m: _flag_of(m[0]), param.help)
        return f"{', '.join(self.methods)}: {text}{default}"

    def typer_parameter(self) -> inspect.Parameter:
        """The parameter of a Typer command that reads this flag (unset: None, or False)."""
        param = self.param
        if param.kind == "bool":
            annotation: Any = Annotated[bool, typer.Option(self.flag, help=self.help)]
            default: Any = False
        else:
            kind = _TYPES.get(param.kind, str)
            option = typer.Option(self.flag, help=self.help, show_default=False,
                                  min=param.minimum if kind in (int, float) else None,
                                  max=param.maximum if kind in (int, float) else None)
            annotation, default = Annotated[kind | None, option], None  # type: ignore[valid-type]
        return inspect.Parameter(param.name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                 annotation=annotation)


def _flag_of(name: str) -> str:
    """``--name-with-dashes`` for a parameter name with underscores, else the name as is."""
    known = {p.name for params in (*METHOD_PARAMS.values(), WRAPPERS) for p in params}
    return "--" + name.replace("_", "-") if name in known else name


def method_flags() -> tuple[MethodFlag, ...]:
    """A flag for each parameter of the registered methods, in declaration order, then the
    parameters every method takes."""
    takers: dict[str, list[str]] = {}
    first: dict[str, Param] = {}
    for name, params in METHOD_PARAMS.items():
        for param in params:
            first.setdefault(param.name, param)
            takers.setdefault(param.name, []).append(name)
    flags = [MethodFlag(first[n], tuple(m)) for n, m in takers.items() if n not in NOT_FLAGS]
    flags += [MethodFlag(p, (EVERY_METHOD,)) for p in WRAPPERS if p.name not in NOT_FLAGS]
    return tuple(flags)


def with_method_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """``command`` (which takes ``**options``) with one keyword parameter per method flag, so
    Typer offers the flags and passes the ones set as ``options``."""
    signature = inspect.signature(command, eval_str=True)
    own = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    flags = [flag.typer_parameter() for flag in method_flags()]
    command.__signature__ = signature.replace(parameters=[*own, *flags])  # type: ignore[attr-defined]
    return command


def given_options(options: dict[str, Any]) -> dict[str, Any]:
    """The method flags the user set, as method options (paths as text)."""
    return {name: str(value) if isinstance(value, Path) else value
            for name, value in options.items() if value is not None and value is not False}


def takes(method: str, flag: MethodFlag) -> bool:
    """Whether ``method`` takes the parameter behind ``flag``."""
    return EVERY_METHOD in flag.methods or method in flag.methods


def options_for(method: str, options: dict[str, Any]) -> dict[str, Any]:
    """The ``options`` (from flags) that ``method`` takes."""
    return {f.param.name: options[f.param.name] for f in method_flags()
            if f.param.name in options and takes(method, f)}


def check_flags_apply(methods: Sequence[str], options: dict[str, Any]) -> None:
    """Refuse a flag that none of ``methods`` takes, naming the methods that do."""
    for flag in method_flags():
        if flag.param.name in options and not any(takes(m, flag) for m in methods):
            raise ClinsearchError(
                f"{flag.flag} applies to --method {' or '.join(flag.methods)}"
            )


@contextmanager
def method_errors_as_flags(spec_options: Iterable[str] = ()) -> Iterator[None]:
    """Re-raise a library error with the method parameters it names (`rerank_depth`) written as
    the flags that set them (``--rerank-depth``), except those the method spec itself set."""
    try:
        yield
    except ClinsearchError as exc:
        keep = set(spec_options)
        flags = {f.param.name: f.flag for f in method_flags() if f.param.name not in keep}
        message = as_flags(str(exc), flags)
        if message == str(exc):
            raise
        raise ClinsearchError(message) from exc
