"""One local[2] Spark session for every Spark test (starting one takes seconds)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ..conftest import require_system


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    require_system("java")
    from clinsearch.spark.session import spark_session

    # tiny tables: one shuffle partition, and no adaptive re-planning between query stages
    session = spark_session("local[2]", {"spark.sql.shuffle.partitions": "1",
                                         "spark.default.parallelism": "2",
                                         "spark.sql.adaptive.enabled": "false"})
    yield session
    session.stop()
