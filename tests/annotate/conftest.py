"""Fixtures for the annotate tests: a small test lexicon and one annotator per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch.annotate.annotator import Annotator, annotator_for
from clinsearch.annotate.lexicon import Lexicon

MINI = Path(__file__).with_name("mini_lexicon.yaml")


@pytest.fixture(scope="session")
def mini_path() -> Path:
    return MINI


@pytest.fixture(scope="session")
def mini_lexicon() -> Lexicon:
    return Lexicon.load(MINI)


@pytest.fixture(scope="session")
def annotator() -> Annotator:
    """The same cached instance the CLI uses for ``--lexicon mini_lexicon.yaml``."""
    return annotator_for(str(MINI))


@pytest.fixture(scope="session")
def shipped_annotator() -> Annotator:
    """The annotator with the shipped chest X-ray lexicon (what the CLI uses by default)."""
    return annotator_for(None)
