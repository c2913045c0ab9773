"""The documentation cannot rot: the site builds strictly (every link and anchor resolves) and
loads nothing from elsewhere, the CLI reference names every command, every ```python block of
docs/ runs as written (README.md's: tests/index/test_readme.py, its output checked), and every
figure in README.md is in the benchmark table.

Conventions for examples: a ```python block runs in a fresh folder that holds ``IDX``, an index
of the bundled sample; lines starting ``#> `` are output the block must print, in that order. A
block that needs files the reader makes first (a trained model) is fenced ```py and only shown.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md") if "history" not in p.parts)
BLOCK = re.compile(r"```python\n(.*?)```", re.S)
EXTERNAL = re.compile(
    r"<(?:script|link|img|iframe|source)\b[^>]*\b(?:src|href)=\"(?:https?:)?//"
    r"|url\(\s*['\"]?(?:https?:)?//|@import\s+(?:url\()?['\"]?(?:https?:)?//",
    re.I,
)


def _blocks() -> list[object]:
    """Every ```python block, named by page and position; blocks that load the real sentence
    encoder are marked slow."""
    params = []
    for page in PAGES:
        for n, code in enumerate(BLOCK.findall(page.read_text(encoding="utf-8")), 1):
            marks = [pytest.mark.slow] if '"dense"' in code else []
            name = f"{page.relative_to(ROOT)}#{n}"
            params.append(pytest.param(page, code, id=name, marks=marks))
    return params


@pytest.fixture(scope="module")
def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of the bundled sample, built once for the examples that open ``IDX``."""
    from clinsearch import Index
    from clinsearch.corpus.readers import read_reports
    from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path

    path = tmp_path_factory.mktemp("docs") / "IDX"
    Index.build(read_reports(sample_reports_path(), SAMPLE_FORMAT), path, progress=False).close()
    return path


@pytest.mark.parametrize(("page", "code"), _blocks())
def test_python_example_runs(page: Path, code: str, sample_index: Path, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch,
                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "IDX").symlink_to(sample_index, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(page), "exec"), {"__name__": "__docs__"})
    printed = capsys.readouterr().out.splitlines()
    expected = [line[3:] for line in code.splitlines() if line.startswith("#> ")]
    position = 0
    for line in expected:  # each expected line, in order, among the printed ones
        found = printed.index(line, position) if line in printed[position:] else -1
        assert found >= 0, f"{page.name}: expected output line {line!r} not printed: {printed}"
        position = found + 1


def test_cli_reference_names_every_command() -> None:
    from clinsearch.cli import app

    def paths(group: object, prefix: str) -> list[str]:
        found = []
        for name, command in group.commands.items():  # type: ignore[attr-defined]
            full = f"{prefix} {name}"
            found += paths(command, full) if hasattr(command, "commands") else [full]
        return found

    reference = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    commands = paths(typer.main.get_command(app), "clinsearch")
    missing = [c for c in commands if f"`{c}`" not in reference]
    assert len(commands) > 20 and not missing


def test_site_builds_strictly_and_loads_nothing_from_elsewhere(tmp_path: Path) -> None:
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )
    assert done.returncode == 0, done.stderr
    built = [p for p in site.rglob("*") if p.suffix in (".html", ".css", ".js")]
    assert any(p.name == "index.html" for p in built)
    external = [p.relative_to(site) for p in built
                if EXTERNAL.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert not external, f"pages that load from elsewhere: {external}"


def test_every_figure_in_the_readme_is_in_the_benchmark_table() -> None:
    """Figures (numbers with a decimal point or thousands separators) in README.md's prose
    appear in benchmarks/README.md, where each says on what corpus and machine it holds."""
    readme = re.sub(r"```.*?```|\(([^)]*\.(?:md|png))\)", "", (ROOT / "README.md").read_text(
        encoding="utf-8"), flags=re.S)
    figures = set(re.findall(r"(?<![\w.-])(?:\d[\d,]*\.\d+|\d{1,3}(?:,\d{3})+)", readme))
    table = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    assert figures and not [f for f in figures if f not in table]
