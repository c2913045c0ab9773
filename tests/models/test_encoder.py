"""Sentence encoder: loading from a path, clear errors for bad folders, windows, normalisation."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from clinsearch.errors import ClinsearchError
from clinsearch.models.encoder import SentenceEncoder, load_encoder
from clinsearch.models.folder import default_encoder_path, fingerprint


def test_default_model_is_packaged_minilm(minilm: SentenceEncoder) -> None:
    assert minilm.path == default_encoder_path().resolve()
    assert minilm.dim == 384
    assert minilm.max_tokens == 254  # 256 minus [CLS] and [SEP]


def test_embeddings_are_unit_float32_and_semantic(minilm: SentenceEncoder) -> None:
    vectors = minilm.encode_queries(
        ["pleural effusion", "There is a small left pleural effusion.", "The heart is enlarged."]
    )
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_long_passage_is_windowed_not_truncated(minilm: SentenceEncoder) -> None:
    filler = " ".join(["The cardiomediastinal silhouette is within normal limits."] * 40)
    passage = f"{filler} There is a large right pneumothorax."
    encoded = minilm.encode_passages(["No acute disease.", passage])
    windows = encoded.vectors[encoded.owner == 1]
    assert len(windows) >= 2 and list(encoded.owner).count(0) == 1
    query = minilm.encode_queries(["large pneumothorax"])[0]
    first_window_only = windows[0] @ query  # what truncation would have scored
    assert (windows @ query).max() > first_window_only + 0.2


def test_identical_passages_share_vectors(minilm: SentenceEncoder) -> None:
    encoded = minilm.encode_passages(["No pneumothorax.", "Normal heart.", "No pneumothorax."])
    assert list(encoded.owner) == [0, 1, 2]
    np.testing.assert_array_equal(encoded.vectors[0], encoded.vectors[2])


def test_plain_hugging_face_folder_gets_mean_pooling(tiny_encoder_dir: Path) -> None:
    encoder = SentenceEncoder(tiny_encoder_dir)
    assert encoder.dim == 32 and encoder.max_tokens == 62
    vectors = encoder.encode_queries(["no pleural effusion", "normal heart size"])
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert SentenceEncoder(tiny_encoder_dir).fingerprint == encoder.fingerprint


def test_fingerprint_tells_models_apart(minilm: SentenceEncoder, tiny_encoder_dir: Path) -> None:
    assert SentenceEncoder(tiny_encoder_dir).fingerprint != minilm.fingerprint


def test_a_fingerprint_is_kept_until_a_file_of_the_model_changes(
    tiny_encoder_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CLINSEARCH_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "model"
    shutil.copytree(tiny_encoder_dir, model)
    first = fingerprint(model)
    (memo,) = (tmp_path / "cache" / "fingerprints").iterdir()
    assert memo.read_text() == first and memo.stat().st_mode & 0o077 == 0
    memo.write_text("0123456789abcdef")  # a kept value is taken, not recomputed
    assert fingerprint(model) == "0123456789abcdef"
    memo.write_text("not a fingerprint")  # a damaged one is recomputed
    assert fingerprint(model) == first
    weights = model / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b" ")  # same size, new content
    assert fingerprint(model) not in (first, "0123456789abcdef")


def test_load_encoder_reuses_a_loaded_model(tiny_encoder_dir: Path) -> None:
    assert load_encoder(tiny_encoder_dir) is load_encoder(str(tiny_encoder_dir))


def test_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    with pytest.raises(ClinsearchError, match=f"{missing}.*does not exist"):
        SentenceEncoder(missing)


def test_folder_without_weights_names_what_is_missing(
    tmp_path: Path, tiny_encoder_dir: Path
) -> None:
    broken = tmp_path / "broken"
    shutil.copytree(tiny_encoder_dir, broken)
    (broken / "model.safetensors").unlink()
    with pytest.raises(ClinsearchError, match=r"broken.*missing weights"):
        SentenceEncoder(broken)


def test_folder_that_is_not_a_model(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello", encoding="utf-8")
    with pytest.raises(ClinsearchError, match=r"missing config.json, weights.*, tokenizer"):
        SentenceEncoder(tmp_path)
    with pytest.raises(ClinsearchError, match="is a file"):
        SentenceEncoder(tmp_path / "notes.txt")


def test_corrupt_weights_are_a_clear_error(tmp_path: Path, tiny_encoder_dir: Path) -> None:
    broken = tmp_path / "corrupt"
    shutil.copytree(tiny_encoder_dir, broken)
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(ClinsearchError, match=r"corrupt.*could not be loaded"):
        SentenceEncoder(broken)


def test_loading_shows_no_progress_bar_of_transformers(
    tiny_encoder_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    from transformers.utils import logging as hf_logging

    SentenceEncoder(tiny_encoder_dir)
    assert "Loading weights" not in capfd.readouterr().err
    assert hf_logging.is_progress_bar_enabled()  # restored for training's bars
