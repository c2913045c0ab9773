"""The import hook that keeps spaCy and medspaCy from loading torch, SciPy and scikit-learn,
and defers NLTK and langcodes, tested on throw-away packages (tests/search/test_cold_parse.py
checks the real libraries)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from clinsearch.annotate.quiet_imports import QuietImports

GUARDED_INIT = """
try:
    import hidden_probe
    FOUND = True
except ImportError:
    FOUND = False
import deferred_probe
"""
DEFERRED_MODULE = """
import sys
sys.modules[__name__].RAN = True
VALUE = 2
"""
PROBES = ("guarded_probe", "hidden_probe", "deferred_probe")


@pytest.fixture
def probes(tmp_path: Path) -> Iterator[QuietImports]:
    """Packages ``guarded_probe`` (which tries to import ``hidden_probe`` and imports
    ``deferred_probe``), ``hidden_probe`` and ``deferred_probe`` on sys.path, and a hook guarding
    the first against the second and deferring the third; all gone afterwards."""
    (tmp_path / "guarded_probe").mkdir()
    (tmp_path / "guarded_probe" / "__init__.py").write_text(GUARDED_INIT, encoding="utf-8")
    (tmp_path / "hidden_probe.py").write_text("VALUE = 1\n", encoding="utf-8")
    (tmp_path / "deferred_probe.py").write_text(DEFERRED_MODULE, encoding="utf-8")
    hook = QuietImports(guarded=("guarded_probe",), hidden=("hidden_probe",),
                        deferred=("deferred_probe",))
    sys.path.insert(0, str(tmp_path))
    sys.meta_path.insert(0, hook)
    try:
        yield hook
    finally:
        sys.meta_path.remove(hook)
        sys.path.remove(str(tmp_path))
        for name in PROBES:
            sys.modules.pop(name, None)


def test_a_guarded_import_does_not_see_hidden_modules(probes: QuietImports) -> None:
    import guarded_probe  # type: ignore[import-not-found]

    assert guarded_probe.FOUND is False
    assert "hidden_probe" not in sys.modules
    assert type(guarded_probe.__loader__).__name__ == "SourceFileLoader"  # its own loader
    import hidden_probe  # type: ignore[import-not-found]  # others still can import it

    assert hidden_probe.VALUE == 1


def test_a_module_already_loaded_is_never_hidden(probes: QuietImports) -> None:
    hidden = importlib.import_module("hidden_probe")  # first, then the guarded package
    guarded = importlib.import_module("guarded_probe")
    assert guarded.FOUND is True and hidden.VALUE == 1


def test_a_deferred_module_runs_on_first_use(probes: QuietImports) -> None:
    import guarded_probe  # type: ignore[import-not-found]

    deferred = sys.modules["deferred_probe"]
    assert "RAN" not in object.__getattribute__(deferred, "__dict__")  # not run yet
    assert guarded_probe.deferred_probe.VALUE == 2  # runs when touched
    assert deferred.RAN is True
