"""Search fixtures: a small indexed corpus, a small test lexicon, the real annotator and encoder."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch import Index
from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.corpus.model import Report
from clinsearch.search.query_parser import QueryParser
from clinsearch.search.vocabulary import DefaultEncoder, TermVectors

# (report id, patient, visit, text): patients with several visits and several reports per visit.
REPORTS: tuple[tuple[str, str, str, str], ...] = (
    ("a1", "P1", "V1", "FINDINGS: Heart size is normal. No pneumothorax or pleural effusion."),
    ("a2", "P1", "V2", "FINDINGS: Small left pleural effusion. IMPRESSION: Left effusion."),
    ("b1", "P2", "V3", "FINDINGS: Right lower opacity. IMPRESSION: Right lower lobe pneumonia."),
    ("b2", "P2", "V3", "IMPRESSION: Interval improvement of right lower lobe pneumonia."),
    ("c1", "P3", "V4", "FINDINGS: Large right pneumothorax. Mediastinal shift to the left."),
    ("d1", "P4", "V5", "FINDINGS: Cardiomegaly. Mild edema. Bilateral pleural effusions."),
    ("e1", "P5", "V6", "FINDINGS: The lungs are clear. IMPRESSION: No acute disease."),
    ("e2", "P5", "V7", "FINDINGS: Stable cardiomegaly. Lungs are clear. No pneumothorax."),
    ("f1", "P6", "V8", "FINDINGS: Tiny left apical pneumothorax. Chest tube in place."),
    ("g1", "P7", "V9", "IMPRESSION: 1. Pleural effusion on the right. 2. Basal atelectasis."),
)


@pytest.fixture(scope="session")
def reports() -> list[Report]:
    """The search test corpus."""
    return [Report(id=i, text=t, patient_id=p, visit_id=v) for i, p, v, t in REPORTS]


@pytest.fixture(scope="session")
def index(tmp_path_factory: pytest.TempPathFactory, reports: list[Report]) -> Index:
    """The corpus indexed once for read-only search tests."""
    return Index.build(reports, tmp_path_factory.mktemp("search") / "idx", progress=False)


@pytest.fixture
def index_dir(tmp_path: Path, reports: list[Report]) -> Path:
    """A fresh index directory of the corpus, for tests that change or break it."""
    path = tmp_path / "idx"
    Index.build(reports, path, progress=False)
    return path

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
def parser(annotator: Annotator, tmp_path_factory: pytest.TempPathFactory) -> QueryParser:
    return QueryParser(annotator, DefaultEncoder(), tmp_path_factory.mktemp("cache"))


@pytest.fixture(scope="session")
def term_vectors(parser: QueryParser) -> TermVectors:
    return parser.vectors

# A report that says "cardiomegaly" without the word: only dense retrieval can find it.
PARAPHRASE = Report(
    id="h1",
    text="FINDINGS: Stable enlargement of the cardiac silhouette.",
    patient_id="P8",
    visit_id="V10",
)


@pytest.fixture(scope="session")
def dense_index(tmp_path_factory: pytest.TempPathFactory, reports: list[Report]) -> Index:
    """The corpus plus PARAPHRASE, with BM25 and MiniLM embeddings (read-only for the tests)."""
    from clinsearch import IndexConfig

    config = IndexConfig(components=("bm25", "dense"))
    path = tmp_path_factory.mktemp("dense") / "idx"
    return Index.build([*reports, PARAPHRASE], path, config, progress=False)


@pytest.fixture(scope="session")
def tiny_cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny random one-logit cross-encoder folder, built offline."""
    from ..tiny_models import build_tiny_bert

    return build_tiny_bert(tmp_path_factory.mktemp("tiny-cross"), cross_encoder=True)
