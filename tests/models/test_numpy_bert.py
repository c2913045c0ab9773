"""The NumPy BERT gives MiniLM's vectors without torch, or declines (other layouts, long
texts) so that ``models.encoder`` encodes them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from clinsearch.models.encoder import SentenceEncoder
from clinsearch.models.folder import default_encoder_path
from clinsearch.models.numpy_bert import NumpyBert

from ..fresh_process import modules_loaded

PHRASES = ["hazy heart borders", "Dextrocardia", "water on the lung", "post-op changes, L1-L2",
           "café au lait", "3 cm nodule", "XXXX", "the right lower lobe opacity may represent"
           " pneumonia or atelectasis"]


def test_numpy_vectors_are_minilms(minilm: SentenceEncoder) -> None:
    bert = NumpyBert.load(default_encoder_path())
    assert bert is not None
    mine = bert.encode(PHRASES)
    assert mine is not None and mine.dtype == np.float32
    assert np.abs(mine - minilm.encode_queries(PHRASES)).max() < 1e-5


def test_a_text_longer_than_the_window_is_left_to_the_torch_encoder() -> None:
    bert = NumpyBert.load(default_encoder_path())
    assert bert is not None
    assert bert.encode(["effusion " * 300]) is None


def test_other_layouts_are_declined(tmp_path: Path, tiny_encoder_dir: Path) -> None:
    assert NumpyBert.load(tiny_encoder_dir) is None  # a plain Hugging Face folder
    assert NumpyBert.load(tmp_path) is None  # no model at all
    folder = tmp_path / "cls-pooling"
    shutil.copytree(default_encoder_path(), folder)
    pooling = folder / "1_Pooling" / "config.json"
    config = json.loads(pooling.read_text())
    pooling.write_text(json.dumps(config | {"pooling_mode_mean_tokens": False,
                                            "pooling_mode_cls_token": True}))
    assert NumpyBert.load(folder) is None
    broken = tmp_path / "broken"
    shutil.copytree(default_encoder_path(), broken)
    (broken / "model.safetensors").write_bytes(b"not weights")
    assert NumpyBert.load(broken) is None  # models.encoder's load then names the error


def test_the_term_encoder_embeds_a_few_words_without_importing_torch() -> None:
    code = ("from clinsearch.search.vocabulary import DefaultEncoder\n"
            "vectors = DefaultEncoder().encode_queries(['hazy heart borders'])\n"
            "assert vectors.shape == (1, 384)\n")
    assert modules_loaded(code, ["torch", "sentence_transformers"]) == [False, False]
