"""Model fixtures: packaged MiniLM (loaded once per session), tiny BERT folders built offline."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch.models.encoder import SentenceEncoder, load_encoder

from ..tiny_models import build_tiny_bert


@pytest.fixture(scope="session")
def minilm() -> SentenceEncoder:
    return load_encoder(None)


@pytest.fixture(scope="session")
def tiny_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-encoder"))


@pytest.fixture(scope="session")
def tiny_cross_encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny-cross"), cross_encoder=True)
