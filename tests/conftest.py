"""Fixtures shared by every test area: the public data sets, skipped cleanly when absent, and
the system programs some tests need (a skip for those fails in CI, which installs them)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from clinsearch.datasets import IU_XRAY, NEGEX, shared_data


@pytest.fixture(scope="session", autouse=True)
def private_config_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Keep what clinsearch remembers per user (trusted paths) out of the real home folder."""
    folder = tmp_path_factory.mktemp("config")
    os.environ["CLINSEARCH_CONFIG_DIR"] = str(folder)
    return folder


def in_ci() -> bool:
    """Whether the tests run in CI (``CI`` set, as CI services do, e.g. ``CI=true make test``)."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def require_system(*commands: str) -> list[str]:
    """The paths of ``commands`` on PATH; where one is missing, skip the test, except in CI,
    where it fails: ``make test`` installs Debian's chromium, chromedriver and Java there, so a
    skip would hide a broken install."""
    found = [shutil.which(c) for c in commands]
    missing = [c for c, path in zip(commands, found, strict=True) if path is None]
    if missing:
        why = f"{', '.join(missing)} not on PATH ('make test' installs it)"
        if in_ci():
            pytest.fail(f"CI is set but {why}", pytrace=False)
        pytest.skip(why)
    return [path for path in found if path]


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
