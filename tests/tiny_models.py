"""Test helper: build tiny randomly initialised BERT folders (encoder or cross-encoder) offline.

They load through the same paths as real models, with no download; their scores mean nothing
until trained.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
DEFAULT_WORDS = (
    "no",
    "not",
    "without",
    "normal",
    "clear",
    "lungs",
    "heart",
    "size",
    "pleural",
    "effusion",
    "pneumothorax",
    "consolidation",
    "edema",
    "opacity",
    "cardiomegaly",
    "atelectasis",
    "right",
    "left",
    "lower",
    "upper",
    "lobe",
    "mild",
    "the",
    "is",
    "are",
    "of",
    "and",
    "there",
    ".",
    ",",
)


def build_tiny_bert(
    path: str | Path,
    *,
    cross_encoder: bool = False,
    max_length: int = 64,
    words: Sequence[str] = DEFAULT_WORDS,
    seed: int = 0,
) -> Path:
    """Save a 2-layer, 32-wide BERT with a word-level vocab to ``path`` and return it.

    ``cross_encoder=True`` saves a one-logit sequence classifier; otherwise a plain encoder
    (sentence-transformers adds mean pooling when it loads it).
    """
    import torch
    from transformers import (
        BertConfig,
        BertForSequenceClassification,
        BertModel,
        BertTokenizerFast,
    )

    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    tokens = [*SPECIAL_TOKENS, *dict.fromkeys(words)]
    tokenizer = BertTokenizerFast(
        vocab={token: i for i, token in enumerate(tokens)},
        do_lower_case=True,
        model_max_length=max_length,
    )
    config = BertConfig(
        vocab_size=len(tokens),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=max_length,
        initializer_range=0.2,  # wider than BERT's 0.02 so random scores are well apart
        num_labels=1,
    )
    torch.manual_seed(seed)
    model = BertForSequenceClassification(config) if cross_encoder else BertModel(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
