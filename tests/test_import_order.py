"""Imports run one way along the data flow: corpus -> annotate -> index -> search -> evaluate,
and never in a loop among the modules of one folder.

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
                # ``from clinsearch.search import hybrid`` imports the module hybrid too
                found += [(node.lineno, f"{name}.{a.name}") for a in node.names
                          if _is_module(src, f"{name}.{a.name}")]
    return [(line, name) for line, name in found if name.split(".")[0] == "clinsearch"]


def _is_module(src: Path, name: str) -> bool:
    """Whether the dotted ``clinsearch.`` name is a module or package under ``src``."""
    parts = name.split(".")
    if parts[0] != "clinsearch":
        return False
    where = src.joinpath(*parts[1:])
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


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


def _folder(name: str, src: Path) -> str | None:
    """The folder (dotted package) a module's file lies in; None for a package's ``__init__``,
    the folder's face to the rest of the code, which imports its modules to show them."""
    parts = name.split(".")
    is_package = (src.joinpath(*parts[1:]) / "__init__.py").is_file()
    return None if is_package else name.rsplit(".", 1)[0]


def cycles(src: Path = SRC) -> list[str]:
    """Every loop of imports among the modules of one folder, as ``a <-> b <-> c`` (the modules
    that reach each other through imports). Every import
    counts: at the top, inside a function (lazy) or for type checking only, since each is a
    place where one file cannot be read or changed without the other."""
    modules = {".".join(_module(p, src)): p for p in sorted(src.rglob("*.py"))}
    graph: dict[str, list[str]] = {}
    for name, path in modules.items():
        targets = []
        for _, imported in _imports(path, src):
            parts = imported.split(".")
            while parts and ".".join(parts) not in modules:  # ``module.name``: the module
                parts.pop()
            target = ".".join(parts)
            folder = _folder(name, src)
            if target and target != name and folder and _folder(target, src) == folder:
                targets.append(target)
        graph[name] = sorted(set(targets))
    return [" <-> ".join(loop) for loop in _loops(graph)]


def _loops(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (each module of a group reaches
    every other through imports), found by Tarjan's algorithm."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_imports_follow_the_data_flow() -> None:
    assert violations() == []


def test_no_import_loop_inside_a_folder() -> None:
    assert cycles() == []


@pytest.mark.parametrize(
    ("files", "loop"),
    [
        ({"annotate/a.py": "from clinsearch.annotate.b import x",
          "annotate/b.py": "def f():\n    from clinsearch.annotate.a import y"}, True),
        ({"search/a.py": "from clinsearch.search import b",
          "search/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                         "    from clinsearch.search.a import A"}, True),
        ({"index/a.py": "from .b import x", "index/b.py": "from .c import y",
          "index/c.py": "from . import a"}, True),
        ({"index/a.py": "from clinsearch.index.b import x", "index/b.py": "import os"}, False),
        ({"index/a.py": "from clinsearch.search.b import x",
          "search/b.py": "from clinsearch.index.a import y"}, False),  # two folders: the order
    ],
)
def test_the_loop_rule_catches_loops(tmp_path: Path, files: dict[str, str], loop: bool) -> None:
    src = tmp_path / "clinsearch"
    for module, code in files.items():
        (src / module).parent.mkdir(parents=True, exist_ok=True)
        (src / module).parent.joinpath("__init__.py").touch()
        (src / module).write_text(code + "\n", encoding="utf-8")
    assert bool(cycles(src)) is loop


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
