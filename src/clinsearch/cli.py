"""The ``clinsearch`` command line: a thin layer over the Python API."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from clinsearch.errors import ClinsearchError, InputError
from clinsearch.progress import track


class _ClinsearchGroup(TyperGroup):
    """Turns user errors from any command into one clear line on stderr and exit status 2."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ClinsearchError as exc:
            err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False)
            raise typer.Exit(2) from exc


app = typer.Typer(
    name="clinsearch",
    cls=_ClinsearchGroup,
    help="Negation-aware search over clinical reports.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
err_console = Console(stderr=True, soft_wrap=True)  # one line per message, never wrapped
console = Console(soft_wrap=True)


@app.callback()
def _root() -> None:
    """Index clinical reports, find findings with negation, search and build cohorts."""


def main() -> None:
    """Console-script entry point."""
    app()


# --- index and search ---------------------------------------------------------------------------

Corpus = Annotated[Path, typer.Argument(help="Corpus file or folder to read.", show_default=False)]
IndexDir = Annotated[Path, typer.Argument(help="Index directory.", show_default=False)]
CorpusFormat = Annotated[
    str,
    typer.Option(
        "--format", "-f", help="Corpus format: csv, jsonl, txt-dir, iu-xray or mimic-notes."
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
SkipBad = Annotated[
    bool,
    typer.Option("--skip-bad", help="Skip bad records (counted and reported) instead of failing."),
]
_BATCH_QUERIES = 64
_DEMO_QUERIES: tuple[tuple[str, str, str], ...] = (
    ("pleural effusion", "report", "reports, each scored by its best sentence"),
    (
        "no pneumothorax",
        "sentence",
        "a negated query: 'no' is kept, so negated sentences rank first",
    ),
    ("right lower lobe pneumonia", "patient", "patients, each scored by their best report"),
    ("cardiomegaly", "visit", "visits, each scored by their best report"),
)


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
    skip_bad: SkipBad = False,
) -> None:
    """Index a corpus into DIR: reports and sentences (Parquet) and BM25 indexes (tantivy)."""
    from clinsearch.corpus.readers import ReadStats
    from clinsearch.index import Index

    mapping = _mapping(
        id_column, text_columns, patient_column, visit_column, type_column, date_column, suffix
    )
    stats = ReadStats()
    index = Index.build(_read(corpus, fmt, skip_bad, stats, mapping), out)
    counts = index.manifest.counts
    console.print(
        f"indexed {counts.reports} reports ({counts.sentences} sentences, {counts.visits} visits,"
        f" {counts.patients} patients) into {escape(str(out))}"
    )
    _report_skips(stats)


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
    skip_bad: SkipBad = False,
) -> None:
    """Add the reports of another corpus to an index (their ids must be new)."""
    from clinsearch.corpus.readers import ReadStats
    from clinsearch.index import Index

    index = Index.open(index_dir)
    mapping = _mapping(
        id_column, text_columns, patient_column, visit_column, type_column, date_column, suffix
    )
    stats = ReadStats()
    added = index.add(_read(corpus, fmt, skip_bad, stats, mapping))
    console.print(f"added {added} reports; the index now holds {index.manifest.counts.reports}")
    _report_skips(stats)


@app.command("delete")
def delete_command(
    index_dir: IndexDir,
    ids: Annotated[str | None, typer.Option(help="Report ids to delete, comma-separated.")] = None,
    ids_file: Annotated[Path | None, typer.Option(help="File with one report id per line.")] = None,
) -> None:
    """Delete reports from an index by id (every id must be in the index)."""
    from clinsearch.index import Index

    if (ids is None) == (ids_file is None):
        raise ClinsearchError("give exactly one of --ids or --ids-file")
    index = Index.open(index_dir)
    wanted = (
        _ids_from_file(ids_file, index)
        if ids_file
        else [i.strip() for i in ids.split(",") if i.strip()]
    )
    deleted = index.delete(wanted)
    console.print(f"deleted {deleted} reports; the index now holds {index.manifest.counts.reports}")


IncludeUncertain = Annotated[
    bool,
    typer.Option("--include-uncertain",
                 help="concept/cohort: also match hedged findings ('possible pneumonia')."),
]
PolarityMode = Annotated[
    str,
    typer.Option(help="concept/cohort: 'query' keeps the polarity the query states "
                 "('pneumonia' never matches 'no pneumonia'); 'any' ignores polarity."),
]


@app.command("search")
def search_command(
    index_dir: IndexDir,
    query: Annotated[
        str | None, typer.Argument(help="Query text (or use --queries).", show_default=False)
    ] = None,
    queries: Annotated[
        Path | None,
        typer.Option(help="Batch mode: a file of 'qid<TAB>query' lines (header optional)."),
    ] = None,
    level: Annotated[
        str, typer.Option(help="Rank sentences, reports, visits or patients.")
    ] = "report",
    top: Annotated[int, typer.Option(help="Number of results per query.", min=1)] = 10,
    output: Annotated[str, typer.Option("--format", help="Output: table, json or trec.")] = "table",
    method: Annotated[str, typer.Option(help="Retrieval method (bm25, concept).")] = "bm25",
    whole_report: Annotated[
        bool, typer.Option("--whole-report", help="bm25: score whole reports, not best sentences.")
    ] = False,
    include_uncertain: IncludeUncertain = False,
    polarity: PolarityMode = "query",
    tag: Annotated[
        str | None, typer.Option(help="trec: run tag (default clinsearch-METHOD).")
    ] = None,
) -> None:
    """Search an index with a query, or a file of queries (batch mode, e.g. --format trec)."""
    from clinsearch.index import Index
    from clinsearch.search.hit import LEVELS
    from clinsearch.search.output import OUTPUT_FORMATS
    from clinsearch.search.queries import Query, read_queries

    if (query is None) == (queries is None):
        raise ClinsearchError("give a query or --queries FILE (not both)")
    if level not in LEVELS:
        raise ClinsearchError(f"unknown level {level!r}; choose one of {', '.join(LEVELS)}")
    if output not in OUTPUT_FORMATS:
        raise ClinsearchError(
            f"unknown output format {output!r}; choose one of {', '.join(OUTPUT_FORMATS)}"
        )
    batch = read_queries(queries) if queries else [Query("1", query or "")]
    options: dict[str, Any] = {"whole_report": True} if whole_report else {}
    if include_uncertain or polarity != "query":
        if method != "concept":
            raise ClinsearchError("--include-uncertain and --polarity apply to --method concept")
        options |= {"include_uncertain": include_uncertain, "polarity": polarity}
    index = Index.open(index_dir)
    run_tag = tag or f"clinsearch-{method}"
    chunks = [batch[i : i + _BATCH_QUERIES] for i in range(0, len(batch), _BATCH_QUERIES)]
    for chunk in track(chunks, "searching", total=len(chunks), enabled=len(chunks) > 1):
        results = index.search_many([q.text for q in chunk], level, top, method, **options)
        for q, hits in zip(chunk, results, strict=True):
            _print_hits(
                q.qid, q.text, level, method, hits, output, run_tag, lines=queries is not None
            )


@app.command("info")
def info_command(
    index_dir: IndexDir,
    as_json: Annotated[bool, typer.Option("--json", help="Print the manifest as JSON.")] = False,
) -> None:
    """Show an index's manifest: format, counts, configuration and components."""
    from clinsearch.index import Index

    manifest = Index.open(index_dir).manifest.to_dict()
    if as_json:
        typer.echo(json.dumps(manifest, indent=2))
        return
    table = Table(show_header=False, box=None)
    for key, value in manifest.items():
        table.add_row(key, escape(value if isinstance(value, str) else json.dumps(value)))
    console.print(table)


@app.command("demo")
def demo_command(
    out: Annotated[Path, typer.Option(help="Where to write the demo index.")] = Path("demo-index"),
) -> None:
    """Index the bundled synthetic sample corpus and run a few example searches."""
    from clinsearch.corpus.readers import read_reports
    from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path
    from clinsearch.index import Index
    from clinsearch.search.output import hits_table

    index = Index.build(read_reports(sample_reports_path(), SAMPLE_FORMAT), out)
    counts = index.manifest.counts
    console.print(
        f"indexed the bundled sample: {counts.reports} synthetic reports, {counts.sentences}"
        f" sentences, {counts.visits} visits, {counts.patients} patients -> {escape(str(out))}\n"
    )
    for query, level, note in _DEMO_QUERIES:
        console.print(
            f"[bold]$ clinsearch search {escape(str(out))} {query!r} --level {level} --top 5[/]"
        )
        console.print(f"[dim]{note}[/]")
        console.print(hits_table(index.search(query, level=level, top=5), level))  # type: ignore[arg-type]
    console.print(f'Try your own: clinsearch search {escape(str(out))} "QUERY" --level patient')


# --- concept search and cohorts ------------------------------------------------------------------

COHORT_HELP = """Count (and export) the patients, visits and reports a Boolean cohort query matches.

\b
Syntax (keywords in any case):
  pneumonia                      a finding, present (as the lexicon knows it, synonyms included)
  "no pleural effusion"          a negated finding; 'possible X' is an uncertain one
  right lower lobe pneumonia     words in a row form one finding with its modifiers
  A AND B, A OR B, NOT A, ( )    NOT binds tightest, then AND, then OR; 'A B' means A AND B
  (A AND B) same sentence        scope: sentence, report, visit or patient (default: --level)
  type:"CHEST XRAY"              report type          date:2020-01-01..2020-12-31  report date
  section:impression             sentence section     text:"port"  sentences containing text
Filters restrict every finding of the AND group they stand in.
\b
Example:
  clinsearch cohort IDX 'pneumonia AND NOT "pleural effusion"' --level patient --export ids.csv
"""


@app.command("cohort", help=COHORT_HELP)
def cohort_command(
    index_dir: IndexDir,
    query: Annotated[str, typer.Argument(help="The cohort query (see above).", show_default=False)],
    level: Annotated[
        str, typer.Option(help="Unit the query is about and --export lists: patient, visit, "
                          "report or sentence.")
    ] = "patient",
    export: Annotated[
        Path | None,
        typer.Option(help="Write the matching units, each with an evidence sentence, to this CSV."),
    ] = None,
    show: Annotated[int, typer.Option(help="Print the first N matching units.", min=0)] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
    include_uncertain: IncludeUncertain = False,
    polarity: PolarityMode = "query",
) -> None:
    from clinsearch.search.cohort import COUNT_LEVELS, Cohort, write_members_csv
    from clinsearch.search.cohort.syntax import UNITS
    from clinsearch.search.concept_rank import POLARITY_MODES, PolarityOptions

    if level not in UNITS:
        raise ClinsearchError(f"unknown level {level!r}; choose one of {', '.join(UNITS)}")
    if polarity not in POLARITY_MODES:
        raise ClinsearchError(f"unknown polarity {polarity!r}; choose {', '.join(POLARITY_MODES)}")
    cohort = Cohort(index_dir, PolarityOptions(include_uncertain, polarity))
    counts = cohort.counts(query)
    members = cohort.members(query, level) if (export or show) else []  # type: ignore[arg-type]
    if export:
        write_members_csv(members, level, export)  # type: ignore[arg-type]
    if as_json:
        typer.echo(json.dumps({"query": query, "level": level, "counts": counts,
                               "exported": str(export) if export else None}))
        return
    table = Table(title=escape(query), title_justify="left", show_header=False, box=None)
    for unit in COUNT_LEVELS:
        table.add_row(f"{unit}s", f"{counts[unit]:,}")
    console.print(table)
    if show:
        _print_members(members[:show], level)
    if export:
        console.print(f"wrote {len(members):,} {level}s to {escape(str(export))}")


@app.command("explain-query")
def explain_query_command(
    query: Annotated[str, typer.Argument(help="A free-text query.", show_default=False)],
    index_dir: Annotated[
        Path | None, typer.Option("--index", help="Use this index's lexicon.")
    ] = None,
    lexicon: Annotated[
        Path | None, typer.Option(help="Lexicon file (default: the shipped chest X-ray one).")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Show how a query is understood: finding patterns, and unknown words mapped to the lexicon."""
    from clinsearch.search.concept_tools import concept_tools, index_lexicon_path
    from clinsearch.search.explain import explain_query, explain_table

    if index_dir is not None and lexicon is not None:
        raise ClinsearchError("give --index or --lexicon, not both")
    if index_dir is not None:
        from clinsearch.index import Index

        path = index_lexicon_path(Index.open(index_dir))
    else:
        path = str(lexicon) if lexicon else None
    tools = concept_tools(path)
    explained = explain_query(tools.parser.parse(query), tools.hierarchy, tools.lexicon)
    if as_json:
        typer.echo(json.dumps(explained, indent=2, ensure_ascii=False))
    else:
        console.print(explain_table(explained))


def _print_members(members: list[Any], level: str) -> None:
    """A table of cohort members with their evidence sentences."""
    from clinsearch.search.cohort import ID_COLUMNS

    table = Table(show_lines=False)
    for name in ID_COLUMNS[level]:  # type: ignore[index]
        table.add_column(name.removesuffix("_id"))
    table.add_column("matched")
    table.add_column("evidence sentence", ratio=1)
    for m in members:
        table.add_row(*m.ids, escape(m.term), escape(m.sentence))
    console.print(table)


def _mapping(*values: str | None) -> dict[str, str | None]:
    """Reader options from the column-mapping flags (None: the format's default)."""
    names = (
        "id_column",
        "text_columns",
        "patient_column",
        "visit_column",
        "type_column",
        "date_column",
        "suffix",
    )
    return dict(zip(names, values, strict=True))


def _read(
    corpus: Path, fmt: str, skip_bad: bool, stats: Any, mapping: dict[str, str | None]
) -> Iterator[Any]:
    """Stream the corpus's reports; an input with no usable report is a user error."""
    from clinsearch.corpus.readers import read_reports

    empty = True
    for report in read_reports(corpus, fmt, skip_bad=skip_bad, stats=stats, **mapping):
        empty = False
        yield report
    if empty:
        raise InputError("no reports found", file=corpus)


def _report_skips(stats: Any) -> None:
    """Tell how many bad records --skip-bad skipped, by reason, with the first examples."""
    if not stats.skipped_total:
        return
    reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(stats.skipped.items()))
    err_console.print(f"skipped {stats.skipped_total} bad records ({reasons}); first ones:")
    for example in stats.examples:
        err_console.print(f"  {escape(example)}", highlight=False)


def _ids_from_file(path: Path, index: Any) -> list[str]:
    """Report ids from a file (one per line); an id not in the index names its line."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read ids file ({exc})", file=path) from None
    known = index.store.row_by_report_id
    ids = []
    for number, line in enumerate(lines, start=1):
        report_id = line.strip()
        if not report_id:
            continue
        if report_id not in known:
            raise InputError(
                f"id {report_id!r} is not in the index", file=path, line=number, field="id"
            )
        ids.append(report_id)
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
) -> None:
    """Print one query's hits as a table, JSON (one line each in batch mode) or TREC lines."""
    from clinsearch.search.output import hits_table, json_record, json_text, trec_lines

    if output == "table":
        console.print(hits_table(hits, level, title=escape(f"{qid}: {query}" if lines else query)))
    elif output == "json":
        typer.echo(json_text(json_record(qid, query, level, method, hits), lines=lines))
    else:
        for line in trec_lines(qid, hits, tag):
            typer.echo(line)
