"""The benchmark figures are data: benchmarks/figures.yaml is read with file:line errors, a
benchmark records a figure with one call, and benchmarks/README.md (with its copy in the docs
site) is what the figures give: a table edited by hand, or figures not drawn, fail here."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the benchmarks package sits beside src/, at the root
    sys.path.insert(0, str(ROOT))

from benchmarks import render  # noqa: E402
from benchmarks.figures import FIGURES, load, record  # noqa: E402
from clinsearch.errors import InputError  # noqa: E402


def test_the_benchmark_pages_are_drawn_from_the_figures() -> None:
    done = subprocess.run([sys.executable, "-m", "benchmarks.render", "--check"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_a_changed_figure_makes_the_pages_stale() -> None:
    figures = load(FIGURES)
    assert render.stale(figures, write=False) == []
    changed = [replace(figures[0], value=0.123), *figures[1:]]
    assert len(render.stale(changed, write=False)) == 2


def test_every_figure_names_corpus_machine_date_and_commit() -> None:
    figures = load(FIGURES)
    assert len(figures) > 40
    table = render.tables(figures)
    for f in figures:
        assert f.corpus and f.machine and f.date and f.commit and f.command
        assert f"| {f.figure} | **{f.shown()}** |" in table


def test_record_replaces_an_entry_and_keeps_its_note(tmp_path: Path) -> None:
    path = tmp_path / "figures.yaml"
    record("x.map", 0.5, path=path, command="python -m x", group="quality", figure="MAP, x",
           corpus="a corpus", note="one line", digits=3)
    record("y.ms", 2.0, path=path, command="python -m y", group="speed", figure="y", unit="ms",
           corpus="a corpus")
    again = record("x.map", 0.25, path=path, command="python -m x")
    figures = load(path)
    assert [f.id for f in figures] == ["x.map", "y.ms"]
    assert figures[0] == again and again.note == "one line" and again.shown() == "0.250"
    assert figures[1].shown() == "2.0 ms" and figures[1].commit and figures[1].date


def test_a_new_figure_needs_its_fields(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="group, figure, corpus"):
        record("new", 1.0, path=tmp_path / "figures.yaml", command="c")


GOOD = ("- id: {id}\n  group: speed\n  figure: f\n  value: 1\n  corpus: c\n  machine: m\n"
        "  load: 1.0\n  date: d\n  commit: c\n  command: x\n")


@pytest.mark.parametrize(("change", "message"), [
    (("command: x", "command: x\n  colour: red"), "field 'colour': unknown field"),
    (("command: x", "command: x\n  note: " + "x" * 101), "field 'note': a note is one line"),
    (("group: speed", "group: speeed"), "field 'group': unknown group"),
    (("command: x", "command: ''"), "field 'command': missing"),
    (("id: b", "id: a"), "field 'id': duplicate id"),
])
def test_a_bad_entry_names_file_line_and_field(tmp_path: Path, change: tuple[str, str],
                                               message: str) -> None:
    path = tmp_path / "figures.yaml"
    path.write_text(GOOD.format(id="a") + GOOD.format(id="b").replace(*change), encoding="utf-8")
    with pytest.raises(InputError, match=f"figures.yaml:11: {message}"):
        load(path)
