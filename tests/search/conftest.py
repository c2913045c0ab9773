"""Search fixtures: a small test lexicon, the real annotator and encoder, loaded once."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.search.patterns import Hierarchy
from clinsearch.search.query import QueryParser
from clinsearch.search.vocabulary import TermVectors

MINI_LEXICON = Path(__file__).parent / "data" / "mini_lexicon.yaml"


@pytest.fixture(scope="session")
def lexicon() -> Lexicon:
    return Lexicon.load(MINI_LEXICON)


@pytest.fixture(scope="session")
def hierarchy(lexicon: Lexicon) -> Hierarchy:
    return Hierarchy.from_lexicon(lexicon)


@pytest.fixture(scope="session")
def annotator(lexicon: Lexicon) -> Annotator:
    return Annotator(lexicon)


@pytest.fixture(scope="session")
def term_vectors(lexicon: Lexicon, tmp_path_factory: pytest.TempPathFactory) -> TermVectors:
    from clinsearch.models.encoder import load_encoder

    return TermVectors.for_lexicon(lexicon, load_encoder(), tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="session")
def parser(annotator: Annotator, term_vectors: TermVectors) -> QueryParser:
    from clinsearch.models.encoder import load_encoder

    return QueryParser(annotator, lambda: (term_vectors, load_encoder()))
