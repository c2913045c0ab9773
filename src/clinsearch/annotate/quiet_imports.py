"""spaCy and medspaCy imported without the heavy libraries they only probe for or never use.

Importing spaCy imports thinc, which imports torch when it is installed; importing medspaCy
imports QuickUMLS and with it NLTK, whose collocation, parser and classifier modules import
SciPy and scikit-learn: a large share of a cold start (benchmarks/README.md). The annotator
uses none of
them: it needs spaCy's tokenizer and matchers and medspaCy's ConText. While spaCy or medspaCy
is imported for the first time, those libraries look absent to the thread importing it, and
each importer treats that as "not installed" (``thinc.compat``, ``nltk.metrics.association``,
``nltk.parse.transitionparser``, ``nltk.classify.scikitlearn``). A library already loaded is
never hidden, and one hidden during that import can be imported normally afterwards
(sentence-transformers imports torch itself): only thinc's optional torch support stays off,
which spaCy uses for trained transformer pipelines, never for a blank pipeline's tokenizer
and matchers.

Two libraries imported once and used only by functions the annotator never calls are deferred
instead: NLTK, which medspaCy imports through QuickUMLS (only QuickUMLS's constructor uses
it), and langcodes, which ``spacy.util`` imports (it matches language names to spaCy's
languages). Imported by a guarded package's first import, such a
module is created empty (``importlib.util.LazyLoader``) and runs on its first attribute access,
by whoever touches it. A module imported a second time runs then (Python 3.11 reads the
module's ``__spec__`` on every import), so only a module imported once is worth deferring.

``install`` puts the hook on ``sys.meta_path``; ``clinsearch.annotate`` installs it, so every
clinsearch module that imports spaCy (all of them live in that package) imports it this way.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec, PathFinder
from importlib.util import LazyLoader
from types import ModuleType
from typing import Any

GUARDED = ("spacy", "medspacy")  # packages imported with HIDDEN out of sight
HIDDEN = ("torch", "scipy", "sklearn")  # optional imports of theirs that the annotator skips
DEFERRED = ("nltk", "langcodes")  # imports of theirs run on first use (none by the annotator)


def _within(name: str, packages: Sequence[str]) -> bool:
    """Whether module ``name`` is one of ``packages`` or inside one."""
    return any(name == p or name.startswith(p + ".") for p in packages)


class QuietImports(MetaPathFinder):
    """An import hook: the first import of a ``guarded`` package runs with ``hidden`` modules
    not found and ``deferred`` ones loaded lazily (for the importing thread only, and only
    those not already imported)."""

    def __init__(self, guarded: Sequence[str] = GUARDED, hidden: Sequence[str] = HIDDEN,
                 deferred: Sequence[str] = DEFERRED) -> None:
        self.guarded = tuple(guarded)
        self.hidden = tuple(hidden)
        self.deferred = tuple(deferred)
        self._threads: set[int] = set()  # threads now executing a guarded package's import

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        """Hide a ``hidden`` module from a guarded import and defer a ``deferred`` one; give a
        guarded package a loader that runs its import that way; leave every other import to
        the other finders."""
        if threading.get_ident() in self._threads:
            if _within(name, self.hidden):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            if name in self.deferred:
                spec = PathFinder.find_spec(name, path)
                if spec is not None and spec.loader is not None:
                    spec.loader = LazyLoader(spec.loader)
                return spec
            return None
        if name not in self.guarded:
            return None
        spec = PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _QuietLoader(spec.loader, self._threads)
        return spec


class _QuietLoader(Loader):
    """A guarded package's own loader, executing the package with the hook's threads marked;
    the module keeps its own loader once loaded."""

    def __init__(self, loader: Any, threads: set[int]) -> None:
        self._loader = loader
        self._threads = threads

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        """The package's own loader decides how to create the module."""
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        """Run the package's code with the hidden modules out of sight of this thread."""
        if module.__spec__ is not None:
            module.__spec__.loader = self._loader
        module.__loader__ = self._loader
        thread = threading.get_ident()
        self._threads.add(thread)
        try:
            self._loader.exec_module(module)
        finally:
            self._threads.discard(thread)


def install() -> None:
    """Put the hook first on ``sys.meta_path`` (once per process)."""
    if not any(isinstance(finder, QuietImports) for finder in sys.meta_path):
        sys.meta_path.insert(0, QuietImports())
