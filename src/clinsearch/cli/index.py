"""Index and search commands: ``index``, ``add``, ``delete``, ``optimize``, ``search``, ``info``,
``check``."""

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
    ContextOpt,
    Corpus,
    CorpusFormat,
    DateColumn,
    DateFormat,
    EncoderModel,
    Engine,
    IdColumn,
    IncludeUncertain,
    IndexDir,
    LexiconOpt,
    Partitions,
    PatientColumn,
    SkipBad,
    SparkMaster,
    Staging,
    Suffix,
    TermModel,
    TextColumns,
    TypeColumn,
    VisitColumn,
    Workers,
    check_engine,
)
from clinsearch.errors import ClinsearchError, InputError, shown
from clinsearch.parallel import available_cores
from clinsearch.progress import track
from clinsearch.terminal import printable
from clinsearch.user_files import read_user_text

_BATCH_QUERIES = 64


@app.command("index")
def index_command(
    corpus: Corpus,
    fmt: CorpusFormat,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Index directory to write (replaced if an index).")
    ],
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
    dense: Annotated[
        bool,
        typer.Option(
            "--dense", help="Also embed every sentence for --method dense/hybrid (slower build)."
        ),
    ] = False,
    model: EncoderModel = None,
    lexicon: LexiconOpt = None,
    term_model: Annotated[
        Path | None,
        typer.Option(
            help="Term encoder folder (from 'clinsearch train terms') to record in the index:"
            " concept search, explain-query and cohort use it unless --term-model overrides."
        ),
    ] = None,
    section_context: Annotated[
        list[str] | None,
        typer.Option(
            "--section-context",
            help="SECTION=CONTEXT: what the findings of a section count as (historical, family,"
            " hypothetical, or none: the report's own), changing the shipped meaning"
            " (indication=historical). Repeatable.",
        ),
    ] = None,
    engine: Engine = "local",
    spark_master: SparkMaster = None,
    partitions: Partitions = None,
    staging: Staging = None,
) -> None:
    """Index a corpus into DIR: reports and sentences (Parquet), BM25 indexes (tantivy) and
    the findings of every sentence (Parquet; concept, polarity, context, modifiers)."""
    from clinsearch import Index, IndexConfig
    from clinsearch.corpus.readers import ReadStats
    from clinsearch.search.concept.tools import TERM_MODEL_OPTION, checked_term_model

    check_engine(engine, fmt)
    mapping = reader_mapping(
        id_column, text_columns, patient_column, visit_column, type_column, date_column, suffix
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
    config = IndexConfig(components=components, options=options)
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


SearchPolarity = Annotated[
    str,
    typer.Option(
        help="query: concept search keeps the polarity the query states, other methods do not"
        " filter; any: results must mention the query's concepts; present / absent: results"
        " must state them present / absent, with any method (uses the findings table)."
    ),
]


@app.command("search")
def search_command(
    index_dir: IndexDir,
    query: Annotated[
        str | None,
        typer.Argument(help="Query text (or use --queries).", metavar="QUERY", show_default=False),
    ] = None,
    queries: Annotated[
        Path | None,
        typer.Option(help="Batch mode: a file of 'qid<TAB>query' lines (header optional)."),
    ] = None,
    level: Annotated[
        str, typer.Option(help="What to rank: sentence, report, visit or patient.")
    ] = "report",
    top: Annotated[int, typer.Option(help="Number of results per query.", min=1)] = 10,
    output: Annotated[str, typer.Option("--format", help="Output: table, json or trec.")] = "table",
    method: Annotated[
        str | None,
        typer.Option(help="Retrieval method: bm25, concept, dense (index built with --dense)"
                     " or hybrid, optionally with options: NAME:key=value,... (e.g."
                     " bm25:whole_report=true, hybrid:methods=bm25,dense,weights=bm25=1,dense=2;"
                     " see 'clinsearch methods'). Default: hybrid when the index has vectors,"
                     " else concept (both read negation; bm25 does not).", show_default=False),
    ] = None,
    whole_report: Annotated[
        bool,
        typer.Option(
            "--whole-report",
            help="bm25: score whole reports, not best sentences (same as bm25:whole_report=true).",
        ),
    ] = False,
    model: EncoderModel = None,
    methods: Annotated[
        str | None,
        typer.Option(
            help="hybrid: methods to fuse, comma-separated (default bm25,dense[,concept])."
        ),
    ] = None,
    fusion: Annotated[
        str | None,
        typer.Option(
            help="hybrid: tiered (concept-search tiers first, weighted scores within a tier;"
            " the default when concept takes part), weighted (normalised scores) or rrf"
            " (reciprocal rank)."
        ),
    ] = None,
    weights: Annotated[
        str | None, typer.Option(help="hybrid: method weights, e.g. bm25=1,dense=0.5.")
    ] = None,
    rerank: Annotated[
        Path | None,
        typer.Option(help="Cross-encoder model folder: re-rank the top --rerank-depth results."),
    ] = None,
    rerank_depth: Annotated[
        int | None,
        typer.Option(help="How many first-stage results to re-rank (default 50).", min=1),
    ] = None,
    rerank_input: Annotated[
        str | None,
        typer.Option(
            help="What the cross-encoder reads: report (text, default), sentence (best"
            " sentence) or summary (report concepts without negated findings)."
        ),
    ] = None,
    include_uncertain: IncludeUncertain = False,
    polarity: SearchPolarity = "query",
    context: ContextOpt = None,
    term_model: TermModel = None,
    tag: Annotated[
        str | None, typer.Option(help="trec: run tag (default clinsearch-METHOD).")
    ] = None,
) -> None:
    """Search an index with a query, or a file of queries (batch mode, e.g. --format trec)."""
    from clinsearch import Index
    from clinsearch.hit import LEVELS
    from clinsearch.query_file import Query, read_queries
    from clinsearch.search.no_hits import no_hits_reason
    from clinsearch.search.output import OUTPUT_FORMATS
    from clinsearch.search.polarity import polarity_options
    from clinsearch.search.registry import parse_method

    if (query is None) == (queries is None):
        raise ClinsearchError("give a query or --queries FILE (not both)")
    if level not in LEVELS:
        raise ClinsearchError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    if output not in OUTPUT_FORMATS:
        raise ClinsearchError(
            f"unknown output format {output!r}; choose one of {', '.join(OUTPUT_FORMATS)}"
        )
    index = Index.open(index_dir)
    method = method or index.default_method
    spec = parse_method(method)
    for given, name in ((term_model, "--term-model"), (context, "--context")):
        if given is not None and spec.method not in ("concept", "hybrid"):
            raise ClinsearchError(f"{name} applies to --method concept or hybrid")
    batch = read_queries(queries) if queries else [Query("1", query or "")]
    # the command's options join the spec's, in the one spec every method is built from
    spec = spec.with_options(**_search_options(
        whole_report=whole_report or None,
        model=model,
        methods=methods,
        fusion=fusion,
        weights=weights,
        rerank=rerank,
        rerank_depth=rerank_depth,
        rerank_input=rerank_input,
        include_uncertain=include_uncertain or None,
        term_model=term_model,
        context=context,
    ) | polarity_options(spec.method, polarity))
    run_tag = tag or f"clinsearch-{method}"
    chunks = [batch[i : i + _BATCH_QUERIES] for i in range(0, len(batch), _BATCH_QUERIES)]
    for chunk in track(chunks, "searching", total=len(chunks), enabled=len(chunks) > 1):
        results = index.search_many([q.text for q in chunk], level, top, spec)
        for q, hits in zip(chunk, results, strict=True):
            reason = "" if hits else no_hits_reason(index, q.text)
            _print_hits(q.qid, q.text, level, method, hits, output, run_tag,
                        lines=queries is not None, empty_reason=reason)


@app.command("methods")
def methods_command() -> None:
    """List the search methods and the options each takes (for --method NAME:key=value,...)."""
    from clinsearch.search.registry import METHODS, WRAPPER_PARAMS, method

    table = Table(title="search methods", title_justify="left", show_lines=True)
    for column in ("method", "option", "type", "default", "choices"):
        table.add_column(column, no_wrap=True)
    table.add_column("what", ratio=1)
    for name in METHODS:
        spec = method(name)
        needs = f" (needs: {', '.join(spec.needs)})" if spec.needs else ""
        table.add_row(name, "", "", "", "", escape(spec.help + needs))
        for param in spec.params:
            table.add_row("", *_param_cells(param))
    table.add_row("every method", "", "", "", "", "")
    for param in WRAPPER_PARAMS:
        table.add_row("", *_param_cells(param))
    console.print(table)


def _param_cells(param: Any) -> list[str]:
    """A parameter's name, type, default, choices and help as table cells."""
    default = "" if param.default is None else str(param.default)
    needs = f" (needs the {param.needs} component)" if param.needs else ""
    return [param.name, param.kind, default, ", ".join(param.choices),
            escape(param.help + needs)]


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


def _search_options(**given: Any) -> dict[str, Any]:
    """The search options the user set (paths as strings), to pass to the method."""
    return {k: str(v) if isinstance(v, Path) else v for k, v in given.items() if v is not None}


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
        ids.append(report_id)
        lines.append(number)
    rows = index.store.report_ids.rows_of(ids).tolist()
    for report_id, number, row in zip(ids, lines, rows, strict=True):
        if row < 0:
            raise InputError(
                f"id {shown(report_id)} is not in the index", file=path, line=number, field="id"
            )
    return ids


def _print_hits(
    qid: str,
    query: str,
    level: Any,
    method: str,
    hits: list[Any],
    output: str,
    tag: str,
    *,
    lines: bool,
    empty_reason: str = "",
) -> None:
    """Print one query's hits as a table, JSON (one line each in batch mode) or TREC lines;
    a query with no hits says why (in the table, the JSON, or on stderr beside TREC lines)."""
    from clinsearch.search.output import hits_table, json_record, json_text, trec_lines

    if output == "table":
        title = escape(printable(f"{qid}: {query}" if lines else query))
        console.print(hits_table(hits, level, title=title, empty_reason=escape(empty_reason)))
    elif output == "json":
        typer.echo(json_text(json_record(qid, query, level, method, hits, empty_reason),
                             lines=lines))
    else:
        for line in trec_lines(qid, hits, tag):
            typer.echo(line)
        if empty_reason:
            typer.echo(f"query {qid}: no matches: {empty_reason}", err=True)


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
