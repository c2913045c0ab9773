"""Export commands: ``export findings`` (OMOP NOTE_NLP rows, Parquet or CSV)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from clinsearch.cli import app, console
from clinsearch.cli.options import Engine, IndexDir, SparkMaster, check_engine
from clinsearch.errors import ClinsearchError

export_app = typer.Typer(help="Export an index's data in standard shapes (OMOP NOTE_NLP).",
                         no_args_is_help=True)
app.add_typer(export_app, name="export")
SHAPES = ("omop-note-nlp",)


@export_app.command("findings")
def export_findings_command(
    index_dir: IndexDir,
    out: Annotated[Path, typer.Option("--out", "-o", help="File to write (a folder of part"
                                      " files with --engine spark).")],
    shape: Annotated[str, typer.Option("--format", help="Row shape: omop-note-nlp (OMOP CDM"
                                       " v5.4 NOTE_NLP; see docs/reference/omop.md).")
                                       ] = "omop-note-nlp",
    file_format: Annotated[str | None, typer.Option(
        help="parquet or csv (default: csv when --out ends in .csv, else parquet).")] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace --out if it exists.")] = False,
    engine: Engine = "local",
    spark_master: SparkMaster = None,
    concept_map: Annotated[Path | None, typer.Option(
        "--concept-map", help="CSV source_code,concept_id[,source_concept_id] (source_code"
        " SYSTEM:CODE, e.g. SNOMEDCT_US:233604007): fills note_nlp_concept_id (and"
        " note_nlp_source_concept_id) of the concepts whose lexicon codes it maps.")] = None,
) -> None:
    """Export every finding of an index as OMOP NOTE_NLP rows (never over an existing file
    unless --force; the file is private to its owner)."""
    if shape not in SHAPES:
        raise ClinsearchError(f"unknown format {shape!r}; choose one of {', '.join(SHAPES)}")
    check_engine(engine)
    fmt = file_format or ("csv" if out.suffix.lower() == ".csv" else "parquet")
    if engine == "spark":
        from clinsearch.spark import spark_session
        from clinsearch.spark.omop import write_note_nlp

        rows = write_note_nlp(spark_session(spark_master), index_dir, out, fmt, force,
                              concept_map)
    else:
        from clinsearch.index.omop import write_note_nlp as write_local

        rows = write_local(index_dir, out, fmt, force, concept_map)
    console.print(f"wrote {rows:,} NOTE_NLP rows to {escape(str(out))} ({fmt})")
