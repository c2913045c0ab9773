"""Fixtures shared by every test area: the public data sets, skipped cleanly when absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from clinsearch.datasets import IU_XRAY, NEGEX, shared_data


@pytest.fixture(scope="session", autouse=True)
def private_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Keep what clinsearch remembers per user (trusted paths) out of the real home folder."""
    folder = tmp_path_factory.mktemp("config")
    os.environ["CLINSEARCH_CONFIG_DIR"] = str(folder)
    return folder


@pytest.fixture(scope="session")
def iu_csv() -> Path:
    path = shared_data(IU_XRAY)
    if path is None:
        pytest.skip("IU X-ray reports not found (../shared/data/iu_xray); skipping")
    return path


@pytest.fixture(scope="session")
def negex_file() -> Path:
    path = shared_data(NEGEX)
    if path is None:
        pytest.skip("NegEx test set not found (../shared/data/negex); skipping")
    return path
