"""Option and argument types that several command modules share (Typer ``Annotated`` aliases)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from clinsearch.errors import ClinsearchError

LexiconOpt = Annotated[
    Path | None,
    typer.Option("--lexicon", help="Lexicon YAML (clinsearch-lexicon/1); default: chest X-ray."),
]
Corpus = Annotated[
    Path,
    typer.Argument(help="Corpus file or folder to read.", metavar="CORPUS", show_default=False),
]
IndexDir = Annotated[
    Path, typer.Argument(help="Index directory.", metavar="DIR", show_default=False)
]
CorpusFormat = Annotated[
    str,
    typer.Option(
        "--format", "-f", help="Corpus format: csv, jsonl, txt-dir, iu-xray, mimic-notes,"
        " cmc2007 or cmc2007-coded;"
        " with --engine spark also parquet (a file or folder) or spark-table (CORPUS names a"
        " table of the Spark catalog)."
    ),
]
IdColumn = Annotated[str | None, typer.Option(help="csv: column holding the report id.")]
TextColumns = Annotated[
    str | None, typer.Option(help="csv: text column(s), comma-separated (joined as sections).")
]
PatientColumn = Annotated[str | None, typer.Option(help="csv: column holding the patient id.")]
VisitColumn = Annotated[str | None, typer.Option(help="csv: column holding the visit id.")]
TypeColumn = Annotated[str | None, typer.Option(help="csv: column holding the report type.")]
DateColumn = Annotated[str | None, typer.Option(help="csv: column holding the report date.")]
Suffix = Annotated[str | None, typer.Option(help="txt-dir: file suffix to read (default .txt).")]
DateFormat = Annotated[
    str,
    typer.Option(
        "--date-format",
        help="How dates are written: 'iso' (YYYY-MM-DD, optional time) or a strptime format"
        " such as %m/%d/%Y or %d.%m.%Y. Nothing is guessed: other dates are bad records.",
    ),
]
SkipBad = Annotated[
    bool,
    typer.Option("--skip-bad", help="Skip bad records (counted and reported) instead of failing."),
]
Workers = Annotated[
    int | None,
    typer.Option(
        "--workers",
        min=1,
        help="Processes that segment and annotate in parallel (default: the cores available;"
        " a corpus of one batch runs in one process).",
        show_default=False,
    ),
]
EncoderModel = Annotated[
    Path | None,
    typer.Option(
        help="Sentence-transformers or Hugging Face model folder for dense retrieval"
        " (default: the packaged all-MiniLM-L6-v2), a static model folder, or 'static': the"
        " static model distilled from MiniLM once (about 200x faster to encode on CPU: the"
        " model for vectors at a million reports). Nothing is downloaded."
    ),
]
TermModel = Annotated[
    Path | None,
    typer.Option(
        help="concept search: term encoder folder (from 'clinsearch train terms') that maps"
        " unknown query words to lexicon terms (default: the index's recorded one, else"
        " all-MiniLM-L6-v2)."
    ),
]
IncludeUncertain = Annotated[
    bool,
    typer.Option("--include-uncertain",
                 help="concept/cohort: also match hedged findings ('possible pneumonia')."),
]
Engine = Annotated[
    str,
    typer.Option(help="local (this process) or spark (executors of a Spark session; the same"
                 " results, for corpora one machine cannot process in time)."),
]
SparkMaster = Annotated[
    str | None,
    typer.Option(help="--engine spark: the Spark master URL (default local[2], or the one"
                 " spark-submit set)."),
]
Partitions = Annotated[
    int | None,
    typer.Option(help="--engine spark: how many tasks share the reports (default: the"
                 " session's parallelism).", min=1),
]
Staging = Annotated[
    Path | None,
    typer.Option(help="--engine spark: a folder the driver and every executor can write, for"
                 " the partitions' tables (default: a private temporary folder; fine for"
                 " local[N])."),
]
ENGINES = ("local", "spark")


def check_engine(engine: str, fmt: str | None = None) -> None:
    """Refuse an unknown engine, and the Spark-only formats on the local engine."""
    if engine not in ENGINES:
        raise ClinsearchError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
    if engine == "local" and fmt in ("parquet", "spark-table"):
        raise ClinsearchError(f"--format {fmt} needs --engine spark")

ContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        help="concept/hybrid/cohort: also count findings in this context, comma-separated:"
        " family ('mother had lung cancer'), historical ('history of pneumonia'), hypothetical"
        " ('evaluate for pneumonia'), indication (the clinical history: why the study was"
        " done), or any. Default: only findings asserted for this patient,"
        " now.",
    ),
]


def _use_device(value: str | None) -> str | None:
    """``--device`` checked and made the process-wide choice at once (torch is imported only
    when one is given: a search that loads no model stays cold-start fast)."""
    if value is not None:
        from clinsearch.models.device import use_device

        use_device(value)
    return value


DeviceOpt = Annotated[
    str | None,
    typer.Option(
        "--device", callback=_use_device, show_default=False,
        help="Where models run: auto (a GPU when torch sees one), cpu, cuda or cuda:N"
        " [default: auto, or $CLINSEARCH_DEVICE]. Batch size and precision follow the device.",
    ),
]
