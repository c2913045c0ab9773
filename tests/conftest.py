"""Fixtures shared by every test area: the public data sets, skipped cleanly when absent, and
the system programs some tests need (a skip for those fails in CI, which installs them)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from clinsearch.datasets import IU_XRAY, NEGEX, shared_data

# The slow parts of the suite, each under its own marker and all under ``slow``: ``make
# test-fast`` (``pytest -m "not slow"``) leaves them out, ``make test`` runs everything as CI
# does. A part is named by the test files (paths under tests/) that make it up.
SLOW_PARTS: dict[str, tuple[str, ...]] = {
    "spark": ("spark/",),  # a local Spark session: a JVM and Python workers
    "browser": ("server/test_browser.py",),  # Chromium driven through Selenium
    "model": (  # real models loaded, or models trained
        "models/test_encoder.py", "models/test_cross_encoder.py", "train/",
        "search/test_term_model.py", "search/test_rerank.py", "search/test_cli_dense.py",
        "search/test_clinical_answers.py", "search/test_hybrid.py", "search/test_polarity.py",
        "index/test_dense.py", "index/test_integrity.py", "evaluate/test_separation.py",
    ),
    "crash": (  # processes killed mid-write, faults at every write, readers racing writers
        "index/test_crash.py", "index/test_snapshots.py", "index/test_atomicity.py",
        "index/test_parallel_build.py", "test_parallel.py",
    ),
    "process": (  # the CLI or the server end to end, a cold interpreter, fuzzing
        "server/", "search/test_cli.py", "search/test_cold_parse.py", "search/test_query_fuzz.py",
        "security/test_system_errors.py", "security/test_server_failures.py",
        "security/test_export_commands.py", "annotate/test_quiet_imports.py",
        "test_arrow_pool.py", "test_arrow_numbers.py", "test_gc_pause.py",
        "index/test_indication_context.py",
    ),
    "build": (  # many indexes built, grown, deleted from and merged
        "index/test_segments.py", "index/test_bm25_segments.py", "index/test_index.py",
        "index/test_row_lookup.py", "search/test_cohort_index.py", "index/test_conclusion.py",
    ),
}
DATA_FIXTURES = frozenset({"iu_csv", "negex_file"})  # the shared data sets (skipped if absent)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test of a slow part (``SLOW_PARTS``, or using the shared data) as such."""
    tests = Path(__file__).parent
    for item in items:
        where = item.path.relative_to(tests).as_posix()
        parts = [part for part, paths in SLOW_PARTS.items() if where.startswith(paths)]
        if DATA_FIXTURES & set(getattr(item, "fixturenames", ())):
            parts.append("data")
        for part in parts:
            item.add_marker(part)
        if parts:
            item.add_marker("slow")


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
