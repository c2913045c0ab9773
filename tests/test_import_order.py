"""Imports run one way along the data flow: corpus -> annotate -> index -> search -> evaluate.

``models`` sits below ``index`` (index, search and train load models), ``train`` beside
``evaluate``; top-level modules (``errors``, ``hit``, ``atomic``, ...) hold shared records and
I/O and may be imported from anywhere, but import no stage themselves. The CLI, the server and
the Spark engine are thin layers over everything, so they are not checked; nor is the package
root, which exposes the API.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "clinsearch"
# rank along the data flow; a module may import its own stage or a lower rank only
RANK = {
    "corpus": 0,
    "annotate": 1,
    "models": 2,
    "index": 3,
    "search": 4,
    "evaluate": 5,
    "train": 5,
}
EXEMPT = {"cli", "server", "spark", "__init__", "__main__"}
# siblings of equal rank that still must not import each other
APART = {("evaluate", "train"), ("train", "evaluate")}


def _module(path: Path, src: Path) -> list[str]:
    """The dotted name of a source file, as a list of parts."""
    parts = list(path.relative_to(src.parent).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path, src: Path = SRC) -> list[tuple[int, str]]:
    """``(line, module)`` for every clinsearch import in a file, relative ones resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    here = _module(path, src)
    package = here if path.name == "__init__.py" else here[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            if name == "clinsearch":  # ``from clinsearch import x``: a module, or the API
                found += [(node.lineno, _root_name(src, a.name)) for a in node.names]
            else:
                found.append((node.lineno, name))
    return [(line, name) for line, name in found if name.split(".")[0] == "clinsearch"]


def _root_name(src: Path, name: str) -> str:
    """``clinsearch.NAME`` when NAME is a module or package of the root, else ``clinsearch``."""
    is_module = (src / f"{name}.py").is_file() or (src / name).is_dir()
    return f"clinsearch.{name}" if is_module else "clinsearch"


def _stage(parts: list[str]) -> str | None:
    """The stage a module belongs to, or None for a top-level shared module."""
    if len(parts) < 2:
        return None
    top = parts[1]
    if top in RANK or top in EXEMPT:
        return top
    return None  # a top-level module such as clinsearch.errors


def _against(source: str, target: str) -> bool:
    """Whether stage ``source`` importing stage ``target`` runs against the data flow."""
    return RANK[target] > RANK[source] or (source, target) in APART


def violations(src: Path = SRC) -> list[str]:
    """Every import that runs against the stage order, as ``file:line: a -> b``."""
    found = []
    for path in sorted(src.rglob("*.py")):
        parts = _module(path, src)
        source = parts[1] if len(parts) > 1 else "__init__"
        if path.parent == src:
            source = "shared" if path.stem not in EXEMPT else path.stem
        if source in EXEMPT:
            continue
        for line, name in _imports(path, src):
            target = _stage(name.split("."))
            where = f"{path.relative_to(src.parent)}:{line}: {'.'.join(parts)} -> {name}"
            if target in EXEMPT or name == "clinsearch":
                found.append(where + " (the CLI and the package root are above everything)")
            elif source == "shared":
                if target is not None:
                    found.append(where + " (a shared top-level module imports no stage)")
            elif target not in (None, source) and _against(source, target):
                found.append(where)
    return found


def test_imports_follow_the_data_flow() -> None:
    assert violations() == []


def test_the_walk_sees_imports() -> None:
    imports = dict.fromkeys(name for _, name in _imports(SRC / "index" / "index_store.py"))
    assert "clinsearch.corpus.model" in imports and "clinsearch.errors" in imports


@pytest.mark.parametrize(
    ("module", "code", "bad"),
    [
        ("index/x.py", "from clinsearch.search.hit import Hit", True),
        ("index/x.py", "from ..search import registry", True),
        ("index/x.py", "import clinsearch.evaluate.trec", True),
        ("annotate/x.py", "from clinsearch.models.folder import fingerprint", True),
        ("train/x.py", "from clinsearch.evaluate.bench.weak import labels", True),
        ("search/x.py", "from clinsearch import Index", True),
        ("hit.py", "from clinsearch.search.output import hits_table", True),
        ("search/x.py", "from clinsearch.index.row_lookup import RowLookup", False),
        ("evaluate/x.py", "from clinsearch.search.session import session_for", False),
        ("models/x.py", "from clinsearch.annotate.lexicon import Lexicon", False),
        ("index/x.py", "from clinsearch.hit import Hit", False),
        ("cli/x.py", "from clinsearch.evaluate.trec import Run", False),
    ],
)
def test_the_rule_catches_backward_imports(
    tmp_path: Path, module: str, code: str, bad: bool
) -> None:
    src = tmp_path / "clinsearch"
    file = src / module
    file.parent.mkdir(parents=True)
    file.write_text(code + "\n", encoding="utf-8")
    assert bool(violations(src)) is bad
