"""Static encoder: distilled from a tiny BERT offline, saved privately with provenance, loaded
without torch, encoding like sentence-transformers' ``StaticEmbedding``, named ``static``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from clinsearch.errors import ClinsearchError
from clinsearch.models import folder as model_folder
from clinsearch.models.encoder import load_encoder
from clinsearch.models.model_names import check_named_model
from clinsearch.models.static import StaticEncoder, is_static_folder, read_provenance
from clinsearch.models.static_distill import DistillConfig, distill, trainable

from ..fresh_process import modules_loaded

TEXTS = ["No pleural effusion.", "Mild edema of the right lower lobe.", "the heart size is normal"]


@pytest.fixture(scope="module")
def static_dir(tmp_path_factory: pytest.TempPathFactory, tiny_encoder_dir: Path) -> Path:
    return distill(tiny_encoder_dir, tmp_path_factory.mktemp("static") / "model",
                   DistillConfig(dims=16))


def test_distilled_folder_is_private_with_provenance(
    static_dir: Path, tiny_encoder_dir: Path
) -> None:
    assert is_static_folder(static_dir)
    assert static_dir.stat().st_mode & 0o777 == 0o700
    names = {p.name for p in static_dir.iterdir()}
    assert names == {"config.json", "model.safetensors", "tokenizer.json", "provenance.json"}
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in static_dir.iterdir())
    facts = read_provenance(static_dir)
    assert facts["base_model"] == str(tiny_encoder_dir.resolve())
    assert facts["dims"] == 16 and facts["vocab"] > 30 and facts["training"] is None
    assert facts["created"].startswith("20") and "PCA to 16" in facts["method"]
    assert len(facts["base_fingerprint"]) == 16


def test_load_encoder_gives_a_static_encoder_with_unit_vectors(static_dir: Path) -> None:
    encoder = load_encoder(static_dir)
    assert isinstance(encoder, StaticEncoder) and encoder.dim == 16
    assert encoder is load_encoder(static_dir)  # loaded once per process
    vectors = encoder.encode_queries(TEXTS)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 16)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    passages = encoder.encode_passages([TEXTS[0], TEXTS[1], TEXTS[0]])
    assert passages.owner.tolist() == [0, 1, 2]  # one window each, however long
    assert np.array_equal(passages.vectors[0], passages.vectors[2])
    assert np.allclose(passages.vectors[:2], vectors[:2])
    assert encoder.encode_queries([""]).tolist() == [[0.0] * 16]  # no tokens: a zero vector


def test_vectors_equal_sentence_transformers_static_embedding(static_dir: Path) -> None:
    """What training optimises (the torch module) is what search encodes (numpy)."""
    model = trainable(static_dir)
    with torch.no_grad():
        expected = model.encode(TEXTS, convert_to_numpy=True, normalize_embeddings=True)
    assert np.allclose(load_encoder(static_dir).encode_queries(TEXTS), expected, atol=1e-5)


def test_loads_and_encodes_without_torch(static_dir: Path) -> None:
    code = (
        "from pathlib import Path; from clinsearch.models.encoder import load_encoder;"
        f" e = load_encoder(Path({str(static_dir)!r})); v = e.encode_queries(['no effusion']);"
        " assert v.shape == (1, 16)"
    )
    assert modules_loaded(code, ["torch"]) == [False]


def test_fingerprint_changes_with_the_table(static_dir: Path, tmp_path: Path) -> None:
    wider = distill(read_provenance(static_dir)["base_model"], tmp_path / "wide",
                    DistillConfig(dims=8))
    assert load_encoder(wider).fingerprint != load_encoder(static_dir).fingerprint


def test_pickle_and_broken_static_folders_are_refused(static_dir: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad"
    bad.mkdir()
    for name in ("config.json", "tokenizer.json"):
        (bad / name).write_bytes((static_dir / name).read_bytes())
    (bad / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(ClinsearchError, match=r"cannot read model\.safetensors"):
        load_encoder(bad)
    (bad / "model.safetensors").write_bytes((static_dir / "model.safetensors").read_bytes())
    (bad / "embeddings.pkl").write_bytes(b"x")
    with pytest.raises(ClinsearchError, match="pickle"):
        load_encoder(bad)


def test_the_name_static_distils_the_default_model_once_into_the_cache(
    tmp_path: Path, tiny_encoder_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--model static``: the packaged base model (here: a tiny one in its place) distilled
    into the derived-data cache on first use, reused after."""
    monkeypatch.setenv("CLINSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(model_folder, "default_encoder_path", lambda: tiny_encoder_dir)
    monkeypatch.chdir(tmp_path)
    first = check_named_model("static", "encoder model")
    assert first.parent == (tmp_path / "cache" / "models").resolve()
    assert json.loads((first / "config.json").read_text())["model_type"] == "model2vec"
    made = (first / "model.safetensors").stat().st_mtime_ns
    assert check_named_model("static", "encoder model") == first
    assert (first / "model.safetensors").stat().st_mtime_ns == made
    (tmp_path / "static").mkdir()  # a folder of that name wins: it is checked as a model
    with pytest.raises(ClinsearchError, match="is not a sentence-transformers"):
        check_named_model("static", "encoder model")


def test_an_index_built_with_model_static_records_the_cached_folder(
    tmp_path: Path, tiny_encoder_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from clinsearch import Index, IndexConfig
    from clinsearch.corpus.model import Report

    monkeypatch.setenv("CLINSEARCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(model_folder, "default_encoder_path", lambda: tiny_encoder_dir)
    monkeypatch.chdir(tmp_path)
    config = IndexConfig(("bm25", "dense"), {"dense": {"model": "static"}})
    index = Index.build([Report("r1", "No pleural effusion."), Report("r2", "Mild edema.")],
                        tmp_path / "idx", config, progress=False)
    cached = check_named_model("static", "encoder model")
    assert index.component("dense").meta.model_path == str(cached)
    assert index.search("pleural effusion", "report", 1, "dense")[0].id == "r1"
