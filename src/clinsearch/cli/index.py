"""Index commands: ``index``, ``add``, ``delete``, ``optimize``, ``info``, ``check``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from clinsearch.cli import app, console, err_console
from clinsearch.cli.corpus_input import (
    read_corpus,
    reader_mapping,
    report_long_sentences,
    report_skips,
)
from clinsearch.cli.options import (
    Corpus,
    CorpusFormat,
    DateColumn,
    DateFormat,
    DeviceOpt,
    EncoderModel,
    Engine,
    IdColumn,
    IndexDir,
    LexiconOpt,
    Partitions,
    PatientColumn,
    SkipBad,
    SparkMaster,
    Staging,
    Suffix,
    TextColumns,
    TypeColumn,
    VisitColumn,
    Workers,
    check_engine,
)
from clinsearch.errors import ClinsearchError, InputError, shown
from clinsearch.parallel import available_cores
from clinsearch.terminal import printable
from clinsearch.text_checks import has_surrogate
from clinsearch.user_files import read_user_text

_IndexOut = Annotated[
    Path, typer.Option("--out", "-o", help="Index directory to write (replaced if an index).")
]
_IndexDense = Annotated[
    bool,
    typer.Option(
        "--dense", help="Also embed every sentence for --method dense/hybrid (slower build)."
    ),
]
_IndexTermModel = Annotated[
    Path | None,
    typer.Option(
        help="Term encoder folder (from 'clinsearch train terms') to record in the index:"
        " concept search, explain-query and cohort use it unless --term-model overrides."
    ),
]
_IndexSectionContext = Annotated[
    list[str] | None,
    typer.Option(
        "--section-context",
        help="SECTION=CONTEXT: what the findings of a section count as (indication,"
        " historical, family, hypothetical, or none: the report's own), changing the shipped"
        " meaning (indication=indication). Repeatable.",
    ),
]
_IndexTierOrder = Annotated[
    str | None,
    typer.Option(
        "--tier-order",
        help="NAME,NAME,...: the order in which ranked search returns the tiers of a"
        " finding's mentions (every tier of annotate/data/search_tiers.yaml once, e.g."
        " stated,partial,indication,hedged,historical,hypothetical,family), changing the"
        " shipped order.",
    ),
]


@app.command("index")
def index_command(
    corpus: Corpus,
    fmt: CorpusFormat,
    out: _IndexOut,
    id_column: IdColumn = None,
    text_columns: TextColumns = None,
    patient_column: PatientColumn = None,
    visit_column: VisitColumn = None,
    type_column: TypeColumn = None,
    date_column: DateColumn = None,
    suffix: Suffix = None,
    date_format: DateFormat = "iso",
    skip_bad: SkipBad = False,
    workers: Workers = None,
    dense: _IndexDense = False,
    model: EncoderModel = None,
    device: DeviceOpt = None,
    lexicon: LexiconOpt = None,
    term_model: _IndexTermModel = None,
    section_context: _IndexSectionContext = None,
    tier_order: _IndexTierOrder = None,
    engine: Engine = "local",
    spark_master: SparkMaster = None,
    partitions: Partitions = None,
    staging: Staging = None,
) -> None:
    """Index a corpus into DIR: reports and sentences (Parquet), BM25 indexes (tantivy) and
    the findings of every sentence (Parquet; concept, polarity, context, modifiers)."""
    from clinsearch import Index
    from clinsearch.corpus.readers import ReadStats

    check_engine(engine, fmt)
    mapping = reader_mapping(
        id_column, text_columns, patient_column, visit_column, type_column, date_column, suffix
    )
    config = _config(dense, model, lexicon, section_context, term_model,
                     tier_order)
    stats = ReadStats()
    if engine == "spark":
        from clinsearch.spark import build_index, spark_session

        index = build_index(
            spark_session(spark_master), corpus, out, fmt, config=config, partitions=partitions,
            staging=staging, skip_bad=skip_bad, stats=stats, date_format=date_format, **mapping,
        )
    else:
        reports = read_corpus(corpus, fmt, skip_bad, stats, mapping, date_format)
        index = Index.build(reports, out, config, workers=workers or available_cores())
    counts = index.manifest.counts
    console.print(
        f"indexed {counts.reports} reports ({counts.sentences} sentences, {counts.visits} visits,"
        f" {counts.patients} patients) into {escape(str(out))}"
    )
    report_skips(stats)
    report_long_sentences(index.manifest.components.get("findings", {}).get("long_sentences", 0))
    _warm_term_vectors(index)


@app.command("add")
def add_command(
    index_dir: IndexDir,
    corpus: Corpus,
    fmt: CorpusFormat,
    id_column: IdColumn = None,
    text_columns: TextColumns = None,
    patient_column: PatientColumn = None,
    visit_column: VisitColumn = None,
    type_column: TypeColumn = None,
    date_column: DateColumn = None,
    suffix: Suffix = None,
    date_format: DateFormat = "iso",
    skip_bad: SkipBad = False,
    workers: Workers = None,
    device: DeviceOpt = None,
    engine: Engine = "local",
    spark_master: SparkMaster = None,
    partitions: Partitions = None,
    staging: Staging = None,
) -> None:
    """Add the reports of another corpus to an index (their ids must be new)."""
    from clinsearch import Index
    from clinsearch.corpus.readers import ReadStats

    check_engine(engine, fmt)
    index = Index.open(index_dir)
    mapping = reader_mapping(
        id_column, text_columns, patient_column, visit_column, type_column, date_column, suffix
    )
    stats = ReadStats()
    if engine == "spark":
        from clinsearch.spark import add_to_index, spark_session

        added = add_to_index(
            spark_session(spark_master), index_dir, corpus, fmt, partitions=partitions,
            staging=staging, skip_bad=skip_bad, stats=stats, date_format=date_format, **mapping,
        )
        index = Index.open(index_dir)
    else:
        reports = read_corpus(corpus, fmt, skip_bad, stats, mapping, date_format)
        added = index.add(reports, workers=workers or available_cores())
    console.print(f"added {added} reports; the index now holds {index.manifest.counts.reports}")
    report_skips(stats)
    report_long_sentences(index.manifest.components.get("findings", {}).get("long_sentences", 0))
    _warm_term_vectors(index)


@app.command("delete")
def delete_command(
    index_dir: IndexDir,
    ids: Annotated[str | None, typer.Option(help="Report ids to delete, comma-separated.")] = None,
    ids_file: Annotated[
        Path | None,
        typer.Option(
            help='File with one report id per line; write an id holding a comma, a newline or'
            ' a leading quote as a JSON string, e.g. "a,b" or "line\\nbreak".'
        ),
    ] = None,
    purge: Annotated[
        bool,
        typer.Option(
            "--purge",
            help="Merge the index at once, so that no text, term or vector of the deleted reports"
            " remains in the index folder once readers of older generations close (by default a"
            " delete only marks them, and their data goes at the next 'clinsearch optimize').",
        ),
    ] = False,
) -> None:
    """Delete reports from an index by id (every id must be in the index).

    The reports disappear from every answer at once; their data stays on disk until the next
    merge ('clinsearch optimize') unless --purge is given.
    """
    from clinsearch import Index

    if (ids is None) == (ids_file is None):
        raise ClinsearchError("give exactly one of --ids or --ids-file")
    index = Index.open(index_dir)
    wanted = (
        _ids_from_file(ids_file, index)
        if ids_file
        else [i.strip() for i in ids.split(",") if i.strip()]
    )
    deleted = index.delete(wanted, purge=purge)
    erased = " and erased their data" if purge else ""
    console.print(f"deleted {deleted} reports{erased}; the index now holds"
                  f" {index.manifest.counts.reports}")


@app.command("optimize")
def optimize_command(index_dir: IndexDir) -> None:
    """Merge an index's segments (into as few as its segment size allows) without the reports
    marked deleted: their text, terms and vectors are gone from the index folder once readers
    of older generations close."""
    from clinsearch import Index

    with Index.open(index_dir) as index:
        merged = index.optimize()
        if merged:
            console.print(f"merged {merged} segment(s); the index holds"
                          f" {len(index.generation.segments)} segment(s),"
                          f" {index.manifest.counts.reports} reports")
        else:
            console.print("no segments to merge and no deleted reports; nothing to do")


@app.command("info")
def info_command(
    index_dir: IndexDir,
    as_json: Annotated[bool, typer.Option("--json", help="Print the manifest as JSON.")] = False,
) -> None:
    """Show an index's manifest: format, counts, configuration and components."""
    from clinsearch import Index

    manifest = Index.open(index_dir).manifest.to_dict()
    if as_json:
        typer.echo(json.dumps(manifest, indent=2))
        return
    table = Table(show_header=False, box=None)
    for key, value in manifest.items():
        shown_value = value if isinstance(value, str) else json.dumps(value)
        table.add_row(key, escape(printable(shown_value, one_line=True)))
    console.print(table)


@app.command("check")
def check_command(index_dir: IndexDir) -> None:
    """Verify an index: the checksum of every file, and that its parts agree (reports, the
    sentences' reports, BM25 documents, vectors, findings' sentences). Exit status 1 if not."""
    from clinsearch.index.integrity import check_index

    files, problems = check_index(index_dir)
    for problem in problems:
        err_console.print(f"[bold red]problem:[/] {escape(problem)}", highlight=False)
    if problems:
        err_console.print(f"{escape(str(index_dir))}: {len(problems)} problem(s) found")
        raise typer.Exit(1)
    console.print(f"{escape(str(index_dir))}: ok ({files} files match their checksums; reports,"
                  " sentences, BM25 documents, vectors and findings agree)")


def _ids_from_file(path: Path, index: Any) -> list[str]:
    """Report ids from a file, one per line; a line written as a JSON string ("a,b" or
    "a\\nb") is decoded, for ids holding commas, newlines or quotes. An id not in the index
    names its line."""
    ids, lines = [], []
    for number, line in enumerate(read_user_text(path).splitlines(), start=1):
        report_id = line.strip()
        if not report_id:
            continue
        if report_id.startswith('"'):
            try:
                report_id = json.loads(report_id)
            except json.JSONDecodeError as exc:
                raise InputError(
                    f"bad JSON string: {exc.msg}", file=path, line=number, field="id"
                ) from None
            if not isinstance(report_id, str):
                raise InputError("expected a JSON string", file=path, line=number, field="id")
        if has_surrogate(report_id):
            raise InputError("not UTF-8 text (or a \\ud800-style escape that is no character)",
                             file=path, line=number, field="id")
        ids.append(report_id)
        lines.append(number)
    rows = index.lookup.report_ids.rows_of(ids).tolist()
    for report_id, number, row in zip(ids, lines, rows, strict=True):
        if row < 0:
            raise InputError(
                f"id {shown(report_id)} is not in the index", file=path, line=number, field="id"
            )
    return ids


def _config(dense: bool, model: Path | None, lexicon: Path | None,
            section_context: list[str] | None, term_model: Path | None,
            tier_order: str | None) -> Any:
    """The index configuration the build flags ask for (the default components, and dense)."""
    from clinsearch import IndexConfig
    from clinsearch.search.concept.tools import (
        TERM_MODEL_OPTION,
        TIER_ORDER_OPTION,
        checked_term_model,
        tier_names,
    )

    if model is not None and not dense:
        raise ClinsearchError("--model needs --dense (it chooses the sentence encoder)")
    components = IndexConfig().components + (("dense",) if dense else ())
    options: dict[str, dict[str, Any]] = {}
    if model:
        options["dense"] = {"model": str(model)}
    if lexicon:
        options["findings"] = {"lexicon": str(lexicon)}
    if section_context:
        options.setdefault("findings", {})["section_context"] = section_meanings(section_context)
    if term_model:
        options["concepts"] = {TERM_MODEL_OPTION: checked_term_model(term_model)}
    if tier_order:
        options.setdefault("concepts", {})[TIER_ORDER_OPTION] = tier_names(tier_order)
    return IndexConfig(components=components, options=options)


def _warm_term_vectors(index: Any) -> None:
    """Compute the term vectors concept search needs now (a progress bar on a terminal; once
    per lexicon and term model, then cached), rather than in the first search."""
    from clinsearch.cache_dir import default_cache_dir
    from clinsearch.search.concept.tools import warm_term_vectors

    terms = warm_term_vectors(index)
    err_console.print(f"term vectors for concept search ready ({terms:,} lexicon terms, cached"
                      f" in {escape(str(default_cache_dir()))})", highlight=False)


def section_meanings(given: list[str]) -> dict[str, str]:
    """``--section-context SECTION=CONTEXT`` values as a mapping, each checked (InputError)."""
    from clinsearch.annotate.context_rules import section_contexts

    meanings: dict[str, str] = {}
    for item in given:
        name, sep, flag = item.partition("=")
        if not sep or not name.strip():
            raise InputError("expected SECTION=CONTEXT", field="--section-context")
        meanings[name.strip().lower()] = flag.strip()
    section_contexts(meanings)
    return meanings
