"""The OMOP NOTE_NLP export on Spark: the same rows as the local export, written by executors."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from clinsearch.errors import ClinsearchError
from clinsearch.index.omop import (
    ConceptCodes,
    NlpRun,
    check_output,
    findings_rows,
    note_nlp_rows,
)
from clinsearch.spark.reports import KEY
from clinsearch.spark.tables import read_numbered, read_rows

NOTE_NLP_DDL = (
    "note_nlp_id long, note_id long, section_concept_id int, snippet string, `offset` string,"
    " lexical_variant string, note_nlp_concept_id int, note_nlp_source_concept_id int,"
    " nlp_system string, nlp_date date, nlp_datetime timestamp, term_exists string,"
    " term_temporal string, term_modifiers string"
)


def note_nlp_frame(spark: Any, index: Any, concept_map: str | Path | None = None) -> Any:
    """The NOTE_NLP rows of an open index's generation as a Spark DataFrame (lazy: keep the
    index open until the frame is computed); concept ids from ``concept_map``."""
    from pyspark.sql import functions as sf

    gen = index.generation
    findings = read_numbered(spark, findings_rows(index))
    sentences = read_rows(spark, gen.rows("sentences")).select(
        sf.col("id").alias("sentence_id"), sf.col("text").alias("sentence_text"),
        sf.col("start").alias("sentence_start"))
    integers = read_rows(spark, gen.rows("reports")).select(
        sf.coalesce(sf.bool_and(sf.col("id").rlike("^[0-9]{1,18}$")), sf.lit(False))).first()[0]
    run = replace(NlpRun.of(index.manifest, bool(integers)),
                  codes=ConceptCodes.of(index, concept_map))

    def rows(batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            yield from note_nlp_rows(batch, None, run, ordinals=KEY).to_batches()

    return findings.join(sentences, "sentence_id").mapInArrow(rows, NOTE_NLP_DDL)


def write_note_nlp(spark: Any, index_path: str | Path, out: str | Path, fmt: str = "parquet",
                   force: bool = False, concept_map: str | Path | None = None) -> int:
    """Write the NOTE_NLP rows as a folder of Parquet or CSV part files (Spark's layout);
    returns the number of rows."""
    from clinsearch.index.index_store import IndexStore

    out = Path(out)
    if out.is_dir():  # Spark writes a folder of part files: replace it only with force
        if not force:
            raise ClinsearchError(f"{out}: exists; use `force` to overwrite it")
        check_output(out.with_name(f"{out.name}.new"), fmt, force)  # format and place
    else:
        check_output(out, fmt, force)
    with IndexStore.open(index_path) as index:  # the lease keeps the generation until written
        frame = note_nlp_frame(spark, index, concept_map).cache()
        writer = frame.write.mode("overwrite" if force else "errorifexists")
        if fmt == "csv":
            writer.option("header", True).csv(str(out))
        else:
            writer.parquet(str(out))
        count = frame.count()
        frame.unpersist()
    return count
