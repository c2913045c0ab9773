"""The search methods and their options as plain text, one block per method, wrapped to a
width (``clinsearch methods``): no name, default or choice is ever cut."""

from __future__ import annotations

import textwrap

from clinsearch.search.method_spec import Param
from clinsearch.search.registry import METHODS, WRAPPER_PARAMS, method


def methods_help(width: int = 80) -> str:
    """Every registered method with its options, then the options every method takes."""
    blocks = []
    for name in METHODS:
        spec = method(name)
        needs = f" Needs the index components: {', '.join(spec.needs)}." if spec.needs else ""
        blocks.append(_block(name, spec.help + needs, spec.params, width))
    blocks.append(_block("every method", "Options that wrap any method (filters, polarity,"
                         " re-ranking).", WRAPPER_PARAMS, width))
    return "\n\n".join(blocks) + "\n"


def _block(title: str, about: str, params: tuple[Param, ...], width: int) -> str:
    """A method's name and description, then one entry per option."""
    lines = textwrap.wrap(f"{title}: {about}", width, subsequent_indent="  ")
    for param in params:
        facts = [param.kind]
        if param.default is not None:
            facts.append(f"default {param.default}")
        if param.choices:
            facts.append(f"one of {', '.join(param.choices)}")
        lines += textwrap.wrap(f"{param.name} ({'; '.join(facts)})", width,
                               initial_indent="  ", subsequent_indent="      ")
        needs = f" (needs the {param.needs} component)" if param.needs else ""
        lines += textwrap.wrap(param.help + needs, width, initial_indent="      ",
                               subsequent_indent="      ", break_on_hyphens=False)
    return "\n".join(lines)
