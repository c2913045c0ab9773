"""One local[2] Spark session for every Spark test (starting one takes seconds)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    if shutil.which("java") is None:
        pytest.fail("Spark tests need Java: run 'make test' (it installs openjdk-17-jre-headless)")
    from clinsearch.spark.session import spark_session

    session = spark_session("local[2]", {"spark.sql.shuffle.partitions": "1",
                                         "spark.default.parallelism": "2"})
    yield session
    session.stop()
