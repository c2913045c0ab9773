"""Cross-encoder scoring: same scores as the raw model, batched, long passages windowed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer

from clinsearch.errors import ClinsearchError
from clinsearch.models.cross_encoder import CrossEncoderScorer

PASSAGES = [
    "no pleural effusion .",
    "the heart size is normal .",
    "mild right lower lobe atelectasis .",
    "there is a left pleural effusion and edema .",
    "lungs are clear .",
]


def _raw_logits(folder: Path, query: str, passages: list[str]) -> np.ndarray:
    tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(folder), local_files_only=True)
    batch = tokenizer([query] * len(passages), passages, padding=True, return_tensors="pt")
    with torch.inference_mode():
        return model(**batch).logits[:, 0].numpy()


def test_scores_rank_like_the_raw_model(tiny_cross_encoder_dir: Path) -> None:
    scorer = CrossEncoderScorer(tiny_cross_encoder_dir)
    scores = scorer.score("pleural effusion", PASSAGES, batch_size=2)
    expected = _raw_logits(tiny_cross_encoder_dir, "pleural effusion", PASSAGES)
    assert list(np.argsort(-scores)) == list(np.argsort(-expected))
    np.testing.assert_allclose(scores, expected, atol=1e-5)  # raw logits of the one-logit head


def test_long_passage_scores_as_its_best_window(tiny_cross_encoder_dir: Path) -> None:
    scorer = CrossEncoderScorer(tiny_cross_encoder_dir)
    long = " ".join(PASSAGES * 6)  # ~90 tokens, beyond the 64-token model
    window_scores = scorer.score("effusion", [long])
    assert window_scores.shape == (1,)
    assert window_scores[0] >= scorer.score("effusion", PASSAGES).min()


def test_missing_cross_encoder_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ClinsearchError, match=r"cross-encoder model folder .*does not exist"):
        CrossEncoderScorer(tmp_path / "absent")
