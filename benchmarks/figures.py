"""The benchmark figures as data: ``benchmarks/figures.yaml``, one entry per figure, from which
the table (``python -m benchmarks.render``) and the plots (``python -m benchmarks.plots``) are
drawn. A benchmark script records what it measured with one call::

    record("latency.warm.p50.bm25", 1.0, unit="ms", figure="warm query latency p50, bm25",
           group="speed", corpus=IU, command="python -m benchmarks.performance.bench_latency")

(``unit`` defaults to none, as for MAP), which fills in the machine, its load, the date and the
commit, and replaces the entry with the same id (keeping the fields not given, such as its
note) or appends a new one.
"""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import MISSING, asdict, dataclass, fields, replace
from datetime import UTC, datetime
from pathlib import Path

import yaml

from benchmarks.results_md import BENCHMARKS
from clinsearch.annotate.yaml_nodes import compose
from clinsearch.errors import InputError

FIGURES = BENCHMARKS / "figures.yaml"
# the groups of the table, in the order it shows them
GROUPS = ("quality", "speed", "scale", "service", "spark", "training", "tests")
NOTE_LIMIT = 100  # characters: a note is one line; history goes to benchmarks/results/


@dataclass(frozen=True)
class Figure:
    """One measured figure: what, how much, on what, where, when, at which code, by what command.

    ``value`` is a number (``digits`` fixes how many decimals the table shows) or, for a ratio
    such as ``30/30`` or a range, a short text. ``method``, ``series`` and ``reports`` are what
    the plots group by: the search method; the benchmark a quality figure scores (one panel
    each) or the corpus a scale figure's line follows; and the corpus size in reports."""

    id: str
    group: str
    figure: str
    value: float | int | str
    corpus: str
    machine: str
    load: float | str
    date: str
    commit: str
    command: str
    unit: str = ""
    note: str = ""
    digits: int | None = None
    method: str | None = None
    series: str | None = None
    reports: int | None = None

    def shown(self) -> str:
        """The value with its unit, as the table shows it."""
        if isinstance(self.value, str):
            text = self.value
        elif self.digits is not None:
            text = f"{self.value:,.{self.digits}f}"
        else:
            text = f"{self.value:,}"
        return f"{text} {self.unit}".strip() if self.unit not in ("", "x") else text + self.unit

    def number(self) -> float | None:
        """The value as a number (the middle of a range such as ``0.80-0.97``), or None."""
        if not isinstance(self.value, str):
            return float(self.value)
        parts = self.value.replace(",", "").split("-")
        try:
            return sum(float(p) for p in parts) / len(parts)
        except ValueError:
            return None


REQUIRED = tuple(f.name for f in fields(Figure) if f.default is MISSING)
# the order of the fields in the file
ORDER = ("id", "group", "figure", "value", "unit", "digits", "note", "method", "series",
         "reports", "corpus", "machine", "load", "date", "commit", "command")


def load(path: Path = FIGURES) -> list[Figure]:
    """Every figure of the file, in its order; a malformed entry raises InputError naming the
    file, line and field."""
    text = path.read_text(encoding="utf-8")
    node = compose(text, path)
    if not isinstance(node, yaml.SequenceNode):
        raise InputError("expected a list of figures", file=path, line=1)
    figures, seen = [], set()
    entries = yaml.safe_load(text)
    for item, entry in zip(node.value, entries, strict=True):
        line = item.start_mark.line + 1
        if not isinstance(entry, dict):
            raise InputError("expected a mapping of fields", file=path, line=line)
        figure = _figure(entry, path, line)
        if figure.id in seen:
            raise InputError(f"duplicate id {figure.id!r}", file=path, line=line, field="id")
        seen.add(figure.id)
        figures.append(figure)
    return figures


def _figure(entry: dict, path: Path, line: int) -> Figure:
    """One entry checked: known fields, the required ones present, a known group, a short note."""
    known = {f.name for f in fields(Figure)}
    for name in entry:
        if name not in known:
            raise InputError(f"unknown field (known: {', '.join(sorted(known))})", file=path,
                             line=line, field=str(name))
    for name in REQUIRED:
        if entry.get(name) in (None, ""):
            raise InputError("missing", file=path, line=line, field=name)
    if entry["group"] not in GROUPS:
        raise InputError(f"unknown group (known: {', '.join(GROUPS)})", file=path, line=line,
                         field="group")
    note = str(entry.get("note") or "")
    if len(note) > NOTE_LIMIT or "\n" in note:
        raise InputError(f"a note is one line of at most {NOTE_LIMIT} characters; history goes"
                         " to benchmarks/results/", file=path, line=line, field="note")
    text_fields = ("id", "figure", "unit", "corpus", "machine", "date", "commit", "command")
    return Figure(**{k: str(v) if k in text_fields else v for k, v in entry.items()})


def save(figures: list[Figure], path: Path = FIGURES) -> None:
    """Write the figures, one YAML mapping each, leaving out the optional fields not set."""
    entries = [{k: getattr(f, k) for k in ORDER if getattr(f, k) not in (None, "")}
               for f in figures]
    text = yaml.safe_dump(entries, sort_keys=False, allow_unicode=True, width=100)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(HEADER + text.replace("\n- ", "\n\n- "), encoding="utf-8")
    tmp.replace(path)


HEADER = (
    "# The benchmark figures: benchmarks/README.md and the plots are drawn from this file\n"
    "# (python -m benchmarks.render; python -m benchmarks.plots). Fields: benchmarks/figures.py.\n"
)


def record(id: str, value: float | int | str, *, path: Path = FIGURES, command: str,
           **given: object) -> Figure:
    """Put one measured figure into the file: the entry with this id is replaced (fields not
    given, such as its note, are kept) or a new one is appended (then ``group``, ``figure``
    and ``corpus`` must be given). Machine, load, date and commit are this run's."""
    figures = load(path) if path.exists() else []
    now = {"value": value, "command": command, "machine": machine(), "load": load_average(),
           "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"), "commit": commit()} | given
    for n, old in enumerate(figures):
        if old.id == id:
            figures[n] = new = replace(old, **now)  # type: ignore[arg-type]
            break
    else:
        missing = [k for k in ("group", "figure", "corpus") if k not in given]
        if missing:
            raise InputError(f"a new figure needs {', '.join(missing)}", field="id")
        new = Figure(id=id, **now)  # type: ignore[arg-type]
        figures.append(new)
    _figure({k: v for k, v in asdict(new).items() if v is not None}, path, 0)
    save(figures, path)
    return new


def machine() -> str:
    """This machine in the table's words: cores and architecture."""
    return f"{os.cpu_count()} cores {platform.machine()}"


def load_average() -> float:
    """The one-minute load average now (timings on a shared machine move with it)."""
    return round(os.getloadavg()[0], 1)


def commit() -> str:
    """The checkout's short commit, with ``+changes`` when its code (src/, benchmarks/) differs
    from it; the figures and what is drawn from them are left out (recording changes them)."""
    def git(*words: str) -> str:
        done = subprocess.run(["git", "-C", str(BENCHMARKS.parent), *words],
                              capture_output=True, text=True, check=False)
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    code = ["src", "benchmarks", *(f":!{p}" for p in DRAWN)]
    changed = git("status", "--porcelain", "--untracked-files=no", "--", *code)
    return head + ("+changes" if changed else "")


# files drawn from the figures, rewritten by a run: not a change of the code measured
DRAWN = ("benchmarks/figures.yaml", "benchmarks/README.md")
