"""A Spark session configured for clinsearch: Arrow transfers, quiet logs, no web UI by default.

On a cluster, pass the master URL (or run under ``spark-submit``, which sets it); executors need
clinsearch installed in the Python that ``PYSPARK_PYTHON`` names. For ``local[N]`` masters the
workers use this process's Python, so they import the same clinsearch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from importlib import resources
from typing import Any

DEFAULT_MASTER = "local[2]"
DEFAULTS: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.python.worker.reuse": "true",  # one annotator per worker process, reused by tasks
}


def spark_session(master: str | None = None, conf: Mapping[str, str] | None = None) -> Any:
    """The active Spark session, or a new one on ``master`` (default ``local[2]``)."""
    try:
        from pyspark.sql import SparkSession
    except ImportError:  # pragma: no cover - pyspark is a dependency
        from clinsearch.errors import ClinsearchError

        raise ClinsearchError("the Spark engine needs pyspark (pip install pyspark)") from None
    active = SparkSession.getActiveSession()
    if active is not None and master is None:
        return active
    master = master or DEFAULT_MASTER
    if master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    log_config = resources.files("clinsearch.spark") / "log4j2.properties"
    os.environ.setdefault(  # read when the JVM starts, so set before the first session
        "PYSPARK_SUBMIT_ARGS",
        f'--driver-java-options "-Dlog4j2.configurationFile=file:{log_config}" pyspark-shell',
    )
    builder = SparkSession.builder.master(master).appName("clinsearch")
    for key, value in {**DEFAULTS, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
