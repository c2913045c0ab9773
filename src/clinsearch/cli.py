"""The ``clinsearch`` command line: a thin layer over the Python API."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from typer.core import TyperGroup

from clinsearch.errors import ClinsearchError, InputError
from clinsearch.progress import track

if TYPE_CHECKING:
    from clinsearch.evaluate.compare import Comparison
    from clinsearch.evaluate.queries import Query
    from clinsearch.evaluate.trec import Run

err_console = Console(stderr=True, soft_wrap=True)  # one line per message, never wrapped
console = Console(soft_wrap=True)


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


@app.callback()
def _root() -> None:
    """Index clinical reports, find findings with negation, search and build cohorts."""


# --- finding extraction (annotate, explain, lexicon) -------------------------------------------

lexicon_app = typer.Typer(
    help="Inspect, query and extend the finding lexicon.", no_args_is_help=True
)
app.add_typer(lexicon_app, name="lexicon")

LexiconOpt = Annotated[
    Path | None,
    typer.Option("--lexicon", help="Lexicon YAML (clinsearch-lexicon/1); default: chest X-ray."),
]


@app.command("annotate")
def annotate_cmd(
    input: Annotated[Path, typer.Option("--input", help='JSONL: {"id", "text", "targets"?}.')],
    output: Annotated[Path, typer.Option("--output", help='JSONL: {"id", "findings": [...]}.')],
    lexicon: LexiconOpt = None,
    batch_size: Annotated[int, typer.Option(help="Texts per nlp.pipe batch.")] = 256,
) -> None:
    """Find concepts with polarity, context flags and modifiers in every line of a JSONL file."""
    from rich.progress import Progress

    from clinsearch.annotate.annotator import annotator_for
    from clinsearch.annotate.jsonl import annotate_jsonl

    annotator = annotator_for(str(lexicon) if lexicon else None)
    with Progress(console=err_console, transient=True) as progress:
        task = progress.add_task("annotating", total=None)
        count = annotate_jsonl(
            annotator, input, output, batch_size, lambda n: progress.advance(task, n)
        )
    err_console.print(f"annotated {count} texts -> {escape(str(output))}")


@app.command("explain")
def explain_cmd(
    sentence: Annotated[str, typer.Argument(help="The sentence to annotate.")],
    lexicon: LexiconOpt = None,
) -> None:
    """Show the findings of one sentence: spans marked in the text and a table of patterns."""
    from clinsearch.annotate.annotator import annotator_for
    from clinsearch.annotate.explain import explain

    findings = annotator_for(str(lexicon) if lexicon else None).annotate(sentence)
    Console().print(explain(sentence, findings))


@lexicon_app.command("stats")
def lexicon_stats_cmd(lexicon: LexiconOpt = None) -> None:
    """Count concepts by type, surface forms and modifier values."""
    from rich.table import Table

    from clinsearch.annotate.lexicon import Lexicon

    lex = Lexicon.load(lexicon)
    stats = lex.stats()
    table = Table(title=f"{lex.name} {lex.version}".strip())
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("concepts", str(stats.concepts))
    for ctype, n in stats.by_type.items():
        table.add_row(f"  {ctype}", str(n))
    table.add_row("surface forms (names, terms, abbreviations)", str(stats.surface_forms))
    for category, n in stats.modifier_values.items():
        table.add_row(f"modifier values: {category}", str(n))
    table.add_row("modifier surface forms (incl. compounds)", str(stats.modifier_forms))
    Console().print(table)


@lexicon_app.command("lookup")
def lexicon_lookup_cmd(
    term: Annotated[str, typer.Argument(help="A term as it might appear in a report.")],
    lexicon: LexiconOpt = None,
) -> None:
    """Show which concept(s) and modifier values a term resolves to (exit 1 if none)."""
    from clinsearch.annotate.lexicon import Lexicon
    from clinsearch.annotate.lookup import lookup

    result = lookup(Lexicon.load(lexicon), term)
    console = Console()
    if not result.concepts and not result.modifiers:
        console.print(f"'{escape(term)}': no concept or modifier")
        raise typer.Exit(1)
    for c in result.concepts:
        parents = f" parents={','.join(c.parents)}" if c.parents else ""
        console.print(f"concept {c.id}: {escape(c.name)} type={c.type} region={c.region}{parents}")
    for category, value in result.modifiers:
        console.print(f"modifier {category}={escape(value)}")


@lexicon_app.command("import")
def lexicon_import_cmd(
    source: Annotated[Path, typer.Argument(help="CSV (concept, term[, type]) or OBO file.")],
    format: Annotated[str, typer.Option("--format", help="csv or obo.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the merged lexicon YAML.")],
    replace: Annotated[bool, typer.Option("--replace", help="Replace the base concepts.")] = False,
    lexicon: LexiconOpt = None,
    default_type: Annotated[
        str, typer.Option("--type", help="Type of concepts that name none.")
    ] = "finding",
) -> None:
    """Import a CSV or OBO vocabulary, merged with (or replacing) the base lexicon's concepts."""
    from clinsearch.annotate.lexicon import Lexicon
    from clinsearch.annotate.lexicon_import import import_lexicon

    merged = import_lexicon(source, format, out, Lexicon.load(lexicon), replace, default_type)
    stats = merged.stats()
    err_console.print(
        f"wrote {escape(str(out))}: {stats.concepts} concepts, {stats.surface_forms} surface forms"
    )


def main() -> None:
    """Console-script entry point."""
    app()


# --- index and search ---------------------------------------------------------------------------

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
EncoderModel = Annotated[
    Path | None,
    typer.Option(
        help="Sentence-transformers or Hugging Face model folder for dense retrieval"
        " (default: the packaged all-MiniLM-L6-v2). Nothing is downloaded."
    ),
]
_BATCH_QUERIES = 64
_DEMO_QUERIES: tuple[tuple[str, str, str], ...] = (
    ("pleural effusion", "report", "BM25 matches words: negated mentions rank with positive ones"),
    ("no pneumothorax", "sentence", "a negated query: 'no' is kept as a term, not a stopword"),
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
    dense: Annotated[
        bool,
        typer.Option(
            "--dense", help="Also embed every sentence for --method dense/hybrid (slower build)."
        ),
    ] = False,
    model: EncoderModel = None,
    lexicon: LexiconOpt = None,
) -> None:
    """Index a corpus into DIR: reports and sentences (Parquet), BM25 indexes (tantivy) and
    the findings of every sentence (Parquet; concept, polarity, context, modifiers)."""
    from clinsearch.corpus.readers import ReadStats
    from clinsearch.index import Index, IndexConfig

    mapping = _mapping(
        id_column, text_columns, patient_column, visit_column, type_column, date_column, suffix
    )
    if model is not None and not dense:
        raise ClinsearchError("--model needs --dense (it chooses the sentence encoder)")
    components = IndexConfig().components + (("dense",) if dense else ())
    options: dict[str, dict[str, str]] = {}
    if model:
        options["dense"] = {"model": str(model)}
    if lexicon:
        options["findings"] = {"lexicon": str(lexicon)}
    config = IndexConfig(components=components, options=options)
    stats = ReadStats()
    index = Index.build(_read(corpus, fmt, skip_bad, stats, mapping), out, config)
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

SearchPolarity = Annotated[
    str,
    typer.Option(
        help="query: concept search keeps the polarity the query states, other methods do not"
        " filter; any: results must mention the query's concepts; present / absent: results"
        " must state them present / absent, with any method (uses the findings table)."
    ),
]
SEARCH_POLARITIES = ("query", "any", "present", "absent")


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
        str,
        typer.Option(help="Retrieval method: bm25, concept, dense (index built with --dense)"
                     " or hybrid."),
    ] = "bm25",
    whole_report: Annotated[
        bool, typer.Option("--whole-report", help="bm25: score whole reports, not best sentences.")
    ] = False,
    model: EncoderModel = None,
    methods: Annotated[
        str | None,
        typer.Option(
            help="hybrid: methods to fuse, comma-separated (default bm25,dense[,concept])."
        ),
    ] = None,
    fusion: Annotated[
        str | None, typer.Option(help="hybrid: rrf (reciprocal rank) or weighted (scores).")
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
    options = _search_options(
        whole_report=whole_report or None,
        model=model,
        methods=methods,
        fusion=fusion,
        weights=weights,
        rerank=rerank,
        rerank_depth=rerank_depth,
        rerank_input=rerank_input,
        include_uncertain=include_uncertain or None,
    ) | _polarity_options(method, polarity)
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

def _polarity_options(method: str, polarity: str) -> dict[str, str]:
    """Map --polarity onto concept search's own mode and the filter every method takes."""
    if polarity not in SEARCH_POLARITIES:
        raise ClinsearchError(
            f"unknown polarity {polarity!r}; choose one of {', '.join(SEARCH_POLARITIES)}"
        )
    if polarity == "query":
        return {}
    native = {"polarity": "any"} if method == "concept" else {}
    if method == "concept" and polarity == "any":
        return native
    return native | {"polarity_filter": polarity}


def _search_options(**given: Any) -> dict[str, Any]:
    """The search options the user set (paths as strings), to pass to the method."""
    return {k: str(v) if isinstance(v, Path) else v for k, v in given.items() if v is not None}


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


# --- evaluation -------------------------------------------------------------------------------


def _print_comparison(comp: Comparison, fmt: str, test: str, alpha: float, per_query: bool) -> None:
    """Print a comparison to stdout as a rich table, Markdown or JSON."""
    from clinsearch.evaluate import render

    out = render.table_console()
    if fmt == "json":
        out.print_json(render.to_json(comp))
        return
    queries = render.per_query_rows(comp) if per_query else None
    cols = render.PER_QUERY_TEXT_COLUMNS
    if fmt == "markdown":
        text = render.markdown(comp, test, alpha)
        if queries:
            text += "\n" + render.markdown_from_rows(*queries, text_columns=cols)
        out.print(text, markup=False, highlight=False, end="")
    else:
        out.print(render.rich_table(comp, test, alpha))
        if queries:
            out.print(render.rich_from_rows(*queries, text_columns=cols))


def _index_runs(
    index: Path, queries: list[Query], methods: list[str], level: str, top: int, save: Path | None
) -> list[Run]:
    """Search ``index`` with each method; optionally save each run as ``SAVE/LABEL.run``."""
    from clinsearch.evaluate.runner import index_runs, parse_method
    from clinsearch.evaluate.trec import write_run
    from clinsearch.index import Index

    runs = index_runs(Index.open(index), queries, [parse_method(m) for m in methods], level, top)
    for run in runs if save is not None else []:
        path = save / (re.sub(r"[^\w.=-]+", "_", run.name) + ".run")
        write_run(path, run)
        err_console.print(f"wrote {path}", highlight=False)
    return runs


def _split_metrics(metrics: list[str] | None) -> list[str]:
    """Metric names from repeated and/or comma-separated ``--metric`` options."""
    from clinsearch.evaluate.measures import DEFAULT_MEASURES

    names = [n for m in metrics or [] for n in m.split(",") if n.strip()]
    return names or list(DEFAULT_MEASURES)


@app.command("eval")
def eval_command(
    runs: Annotated[
        list[Path] | None, typer.Argument(help="More run files (as --run).", show_default=False)
    ] = None,
    qrels: Annotated[
        Path | None, typer.Option("--qrels", help="TREC qrels file: qid iteration docid grade.")
    ] = None,
    run: Annotated[
        list[Path] | None,
        typer.Option(
            "--run", help="TREC run file; repeat or list several. The first is the baseline."
        ),
    ] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric",
            "-m",
            help="Metric(s): map, rprec, p@K, ndcg@K, bpref, mrr, recall@K, or an ir_measures "
            "name; repeat or comma-separate. Default: map rprec p@10 ndcg@10 bpref mrr "
            "recall@1 recall@5 recall@100.",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", help="table | markdown | json.")] = "table",
    groups: Annotated[
        Path | None,
        typer.Option(
            "--groups",
            help="Queries TSV (qid, query[, kind]) whose kind column groups the results; "
            "without kind, 'no M' queries are negative and the others positive.",
        ),
    ] = None,
    plot_dir: Annotated[
        Path | None, typer.Option("--plot-dir", help="Write PNG plots into this folder.")
    ] = None,
    per_query: Annotated[
        bool, typer.Option("--per-query", help="Also show every query's values.")
    ] = False,
    test: Annotated[
        str, typer.Option("--test", help="Paired test vs the first run: randomization | ttest.")
    ] = "randomization",
    alpha: Annotated[
        float, typer.Option("--alpha", help="Significance level for the * marker.")
    ] = 0.05,
    allow_unknown: Annotated[
        bool,
        typer.Option(
            "--allow-unknown-queries",
            help="Ignore (with a warning) run queries the qrels do not know, instead of failing.",
        ),
    ] = False,
    index: Annotated[
        Path | None,
        typer.Option("--index", help="Index mode: search this index instead of reading runs."),
    ] = None,
    queries_file: Annotated[
        Path | None,
        typer.Option("--queries", help="Index mode: queries TSV (qid, query[, kind])."),
    ] = None,
    method: Annotated[
        list[str] | None,
        typer.Option(
            "--method",
            help="Index mode: search method, repeatable; NAME or NAME:opt=value,... "
            "(e.g. bm25, bm25:whole_report=true). The first is the baseline.",
            show_default=False,
        ),
    ] = None,
    level: Annotated[
        str, typer.Option("--level", help="Index mode: sentence | report | visit | patient.")
    ] = "report",
    top: Annotated[int, typer.Option("--top", help="Index mode: hits kept per query.")] = 1000,
    save_runs: Annotated[
        Path | None,
        typer.Option("--save-runs", help="Index mode: write each method's TREC run here."),
    ] = None,
) -> None:
    """Score runs against qrels and compare them side by side, per query group.

    Run mode: clinsearch eval --qrels q.qrels --run bm25.run dense.run --groups queries.tsv

    Index mode: clinsearch eval --index DIR --queries q.tsv --qrels q.qrels --method bm25
    --method bm25:whole_report=true (each method searches the index; the first is the baseline).
    """
    from clinsearch.errors import InputError
    from clinsearch.evaluate.compare import compare_runs
    from clinsearch.evaluate.measures import parse_measure
    from clinsearch.evaluate.plots import write_plots
    from clinsearch.evaluate.queries import read_queries
    from clinsearch.evaluate.significance import TESTS
    from clinsearch.evaluate.trec import read_qrels, read_run

    if fmt not in ("table", "markdown", "json"):
        raise InputError(f"unknown format {fmt!r}; use table, markdown or json", field="--format")
    if test not in TESTS:
        raise InputError(f"unknown test {test!r}; use randomization or ttest", field="--test")
    if qrels is None:
        raise InputError("--qrels is required", field="--qrels")
    paths = [*(run or []), *(runs or [])]
    if (index is None) == (not paths):
        raise InputError("give run files (--run) or an index (--index), not both", field="--run")
    measures = [parse_measure(n) for n in _split_metrics(metric)]
    judgements = read_qrels(qrels)
    if index is not None:
        if queries_file is None or not method:
            raise InputError("--index needs --queries and at least one --method", field="--index")
        queries = read_queries(queries_file)
        loaded = _index_runs(index, queries, method, level, top, save_runs)
    else:
        loaded = [read_run(p) for p in paths]
        queries = read_queries(groups) if groups is not None else None
    comp = compare_runs(judgements, loaded, measures, queries, allow_unknown=allow_unknown)
    for warning in comp.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    _print_comparison(comp, fmt, test, alpha, per_query)
    if plot_dir is not None:
        for path in write_plots(comp, judgements, loaded, plot_dir):
            err_console.print(f"wrote {path}", highlight=False)


# --- benchmarks -------------------------------------------------------------------------------

bench_app = typer.Typer(help="Evaluation benchmarks.", no_args_is_help=True)
build_app = typer.Typer(
    help="Build a benchmark: OUT/queries.tsv (qid, query, kind) and OUT/qrels.txt (TREC).",
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")
bench_app.add_typer(build_app, name="build")

BenchOut = Annotated[Path, typer.Option("--out", "-o", help="Folder to write the benchmark into.")]
LexiconPath = Annotated[
    Path | None, typer.Option("--lexicon", help="Lexicon YAML (default: the shipped one).")
]
Seed = Annotated[int, typer.Option("--seed", help="Random seed (the output is deterministic).")]


def _wrote(paths: list[Path], summary: str) -> None:
    """Report what a builder wrote."""
    console.print(summary)
    for path in paths:
        err_console.print(f"wrote {path}", highlight=False)


@build_app.command("iu-mesh")
def bench_iu_mesh(
    out: BenchOut,
    csv: Annotated[
        Path | None,
        typer.Argument(help="IU X-ray CSV (default: ../shared/data/iu_xray/indiana_reports.csv)."),
    ] = None,
    lexicon: LexiconPath = None,
    mesh_map: Annotated[
        Path | None, typer.Option("--mesh-map", help="MeSH map YAML (default: shipped).")
    ] = None,
    min_relevant: Annotated[
        int, typer.Option("--min-relevant", help="Fewest relevant reports a query needs.")
    ] = 5,
) -> None:
    """IU X-ray report level, from the manual MeSH labels: core, modifier and synonym queries.

    Report ids are the CSV's uid; reports with no findings/impression text are skipped, as
    `clinsearch index --format iu-xray --skip-bad` skips them.
    """
    from clinsearch.annotate.lexicon import Lexicon
    from clinsearch.corpus.readers import read_reports
    from clinsearch.datasets import IU_XRAY, shared_data
    from clinsearch.evaluate.bench.benchmark import write_benchmark
    from clinsearch.evaluate.bench.iu_mesh import iu_mesh_benchmark
    from clinsearch.evaluate.mesh import MeshMap

    path = csv or shared_data(IU_XRAY)
    if path is None:
        raise InputError("give the IU X-ray CSV (not found under ../shared/data)", field="CSV")
    reports = list(read_reports(path, "iu-xray", skip_bad=True))
    bench = iu_mesh_benchmark(reports, Lexicon.load(lexicon), MeshMap.load(mesh_map), min_relevant)
    _wrote(write_benchmark(out, bench), bench.summary())


@build_app.command("weak-sentences")
def bench_weak_sentences(
    index: Annotated[Path, typer.Option("--index", help="Index whose sentences are labelled.")],
    out: BenchOut,
    lexicon: LexiconPath = None,
    min_relevant: Annotated[
        int, typer.Option("--min-relevant", help="Fewest relevant sentences a query needs.")
    ] = 3,
    seed: Seed = 0,
) -> None:
    """Sentence level, weak labels (paper 000): "M" / "no M" queries from annotator findings.

    Writes OUT/queries.tsv and OUT/qrels.txt for all queries, OUT/fold1 and OUT/fold2 with the
    queries of two halves of the findings that share no finding, and OUT/split.tsv.
    """
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.annotate.lexicon import Lexicon
    from clinsearch.evaluate.bench.benchmark import write_benchmark, write_split
    from clinsearch.evaluate.bench.weak import index_sentence_findings, weak_benchmark
    from clinsearch.index import Index

    annotator = Annotator(Lexicon.load(lexicon))
    try:
        weak = weak_benchmark(
            index_sentence_findings(Index.open(index), annotator), min_relevant, seed=seed
        )
    except ValueError as exc:
        raise InputError(str(exc), file=index) from None
    paths = write_benchmark(out, weak.all)
    for k, fold in enumerate(weak.folds, start=1):
        paths += write_benchmark(out / f"fold{k}", fold)
    paths.append(write_split(out, weak.split))
    folds = "; ".join(f"fold {k}: {f.summary()}" for k, f in enumerate(weak.folds, start=1))
    _wrote(paths, f"{weak.all.summary()}\n{folds}")


@build_app.command("passages")
def bench_passages(
    corpus: Corpus,
    fmt: CorpusFormat,
    out: BenchOut,
    lexicon: LexiconPath = None,
    max_relevant: Annotated[
        int, typer.Option("--max-relevant", help="Most relevant passages a query may have.")
    ] = 3,
    max_queries: Annotated[int, typer.Option("--queries", help="Queries to sample.")] = 200,
    seed: Seed = 0,
    skip_bad: SkipBad = False,
) -> None:
    """Passage level (paper 004): (entity, section) queries over the sections of a corpus.

    Writes OUT/passages.jsonl (index it with --format jsonl), OUT/queries.tsv and OUT/qrels.txt;
    evaluate with -m recall@1,recall@5,mrr.
    """
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.annotate.lexicon import Lexicon
    from clinsearch.corpus.readers import ReadStats
    from clinsearch.corpus.segment import Segmenter
    from clinsearch.evaluate.bench.benchmark import write_benchmark, write_passages
    from clinsearch.evaluate.bench.passages import passage_benchmark
    from clinsearch.evaluate.bench.weak import annotate_unique

    stats = ReadStats()
    docs = list(
        Segmenter().segment_many(_read(corpus, fmt, skip_bad, stats, _mapping(*[None] * 7)))
    )
    texts = [s.text for d in docs for s in d.sentences]
    found = iter(annotate_unique(Annotator(Lexicon.load(lexicon)), texts))
    labelled = [(d, [next(found) for _ in d.sentences]) for d in docs]
    try:
        built = passage_benchmark(labelled, max_relevant, max_queries, seed)
    except ValueError as exc:
        raise InputError(str(exc), file=corpus) from None
    paths = [write_passages(out / "passages.jsonl", built.passages)]
    paths += write_benchmark(out, built.bench)
    _wrote(paths, f"{len(built.passages)} passages; {built.bench.summary()}")
    _report_skips(stats)


# --- training ---------------------------------------------------------------------------------

train_app = typer.Typer(
    help="Train retrieval models from lexicon weak labels (no manual labels).", no_args_is_help=True
)
app.add_typer(train_app, name="train")

TrainIndex = Annotated[
    Path, typer.Option("--index", help="Index directory whose sentences and findings label.")
]
ModelOut = Annotated[
    Path, typer.Option("--out", "-o", help="Model folder to write (replaced atomically at the end)")
]
BaseModel = Annotated[
    Path | None,
    typer.Option("--base-model", help="Local model folder to start from [default: MiniLM-L6-v2]."),
]
LabelsIn = Annotated[
    Path | None,
    typer.Option("--labels", help="Labels from 'train labels' instead of the index's findings."),
]
Types = Annotated[
    str, typer.Option("--types", help="Comma-separated concept types that make labels.")
]
Epochs = Annotated[int, typer.Option("--epochs", min=1, help="Passes over the training data.")]
Lr = Annotated[float, typer.Option("--lr", help="AdamW learning rate.")]
WeightDecay = Annotated[float, typer.Option("--weight-decay", help="AdamW weight decay.")]
Warmup = Annotated[
    int, typer.Option("--warmup", help="Linear warm-up steps (capped at a tenth of the run).")
]
MaxSteps = Annotated[
    int | None, typer.Option("--max-steps", min=1, help="Stop after this many steps.")
]
CheckpointEvery = Annotated[
    int, typer.Option("--checkpoint-every", help="Checkpoint to OUT.ckpt every N steps (0: never)")
]
Resume = Annotated[
    bool, typer.Option("--resume", help="Continue from the checkpoint in OUT.ckpt if there is one.")
]
Threads = Annotated[
    int | None, typer.Option("--threads", min=1, help="Torch CPU threads [default: torch's].")
]
Seed = Annotated[int, typer.Option("--seed", help="Seed for data order and sampling.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress bars.")]


def _loop(
    epochs: int, lr: float, weight_decay: float, warmup: int, max_steps: int | None,
    checkpoint_every: int, resume: bool, threads: int | None, seed: int, quiet: bool, desc: str,
) -> Any:
    """The shared training-loop settings from command options (and the torch thread count)."""
    from clinsearch.train.loop import LoopConfig

    if threads:
        import torch

        torch.set_num_threads(threads)
    return LoopConfig(
        epochs=epochs, lr=lr, weight_decay=weight_decay, warmup_steps=warmup, max_steps=max_steps,
        seed=seed, checkpoint_every=checkpoint_every, resume=resume, progress=not quiet, desc=desc,
    )


def _types(value: str) -> tuple[str, ...]:
    """Concept types from a comma-separated option."""
    return tuple(t.strip() for t in value.split(",") if t.strip())


def _trained(result: Any, what: str) -> None:
    """One line saying what was trained, where, how long, and the loss at start and end."""
    losses = result.losses
    k = max(1, min(10, len(losses) // 5))
    first, last = sum(losses[:k]) / k, sum(losses[-k:]) / k
    console.print(
        f"trained {what}: {result.steps} steps in {result.seconds:.0f} s, loss {first:.4f} -> "
        f"{last:.4f}, peak memory {result.peak_rss_mb:.0f} MiB; saved to {escape(str(result.out))}"
    )


@train_app.command("labels")
def train_labels_command(
    index_dir: TrainIndex,
    out: Annotated[Path, typer.Option("--out", "-o", help="JSON lines file to write.")],
    types: Types = "finding,disease",
    modifiers: Annotated[
        bool, typer.Option("--modifiers/--no-modifiers", help="Also queries with one modifier.")
    ] = True,
    min_matches: Annotated[
        int, typer.Option("--min-matches", min=1, help="Drop queries matching fewer sentences.")
    ] = 1,
    quiet: Quiet = False,
) -> None:
    """Weak labels: "M" / "no M" queries (with phrasings) and the sentences each one matches."""
    from clinsearch.train.labelfile import write_labels
    from clinsearch.train.pipeline import labels_from_index

    labels = labels_from_index(
        index_dir, types=_types(types), with_modifiers=modifiers, min_matches=min_matches,
        progress=not quiet,
    )
    write_labels(out, labels)
    console.print(
        f"{labels.count('positive')} positive and {labels.count('negative')} negative queries, "
        f"{labels.entries} (query, sentence) entries over {len(labels.texts)} unique sentences; "
        f"wrote {escape(str(out))}"
    )


@train_app.command("biencoder")
def train_biencoder_command(
    index_dir: TrainIndex,
    out: ModelOut,
    labels: LabelsIn = None,
    source: Annotated[
        str, typer.Option("--source", help="findings: 'M'/'no M' queries over sentences; "
                          "sections: (entity, section) queries over section passages.")
    ] = "findings",
    base_model: BaseModel = None,
    loss: Annotated[str, typer.Option("--loss", help="triplet (paper 000) or listwise (paper 004)")]
    = "triplet",
    negatives: Annotated[
        str, typer.Option("--negatives", help="hard: hardest in-batch negative; random: any.")
    ] = "hard",
    margin: Annotated[float, typer.Option("--margin", help="Triplet margin (cosine).")] = 0.5,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=2, help="Pairs per (mega-)batch: in-batch negatives.")
    ] = 128,
    chunk_size: Annotated[
        int, typer.Option("--chunk-size", min=1, help="Texts encoded with gradients at once.")
    ] = 64,
    max_seq_length: Annotated[int, typer.Option("--max-seq-length", min=8)] = 128,
    max_pairs_per_query: Annotated[int | None, typer.Option("--max-pairs-per-query", min=1)] = None,
    phrasings: Annotated[
        bool, typer.Option("--phrasings/--no-phrasings", help="Train on phrasing variants too.")
    ] = True,
    types: Types = "finding,disease",
    epochs: Epochs = 1,
    lr: Lr = 2e-5,
    weight_decay: WeightDecay = 0.01,
    warmup: Warmup = 100,
    max_steps: MaxSteps = None,
    checkpoint_every: CheckpointEvery = 200,
    resume: Resume = False,
    threads: Threads = None,
    seed: Seed = 13,
    quiet: Quiet = False,
) -> None:
    """Fine-tune a sentence-transformers bi-encoder on weak labels (usable by search --model)."""
    from clinsearch.train.biencoder import BiEncoderConfig, train_biencoder
    from clinsearch.train.pipeline import training_data

    _choice("--source", source, ("findings", "sections"))
    _choice("--loss", loss, ("triplet", "listwise"))
    _choice("--negatives", negatives, ("hard", "random"))
    queries, texts = training_data(
        index_dir, labels_file=labels, source=source, phrasings=phrasings,  # type: ignore[arg-type]
        types=_types(types), progress=not quiet,
    )
    config = BiEncoderConfig(
        base_model=str(base_model) if base_model else None, loss=loss,  # type: ignore[arg-type]
        negatives=negatives, margin=margin, batch_size=batch_size,  # type: ignore[arg-type]
        chunk_size=chunk_size, max_seq_length=max_seq_length,
        max_pairs_per_query=max_pairs_per_query,
        loop=_loop(epochs, lr, weight_decay, warmup, max_steps, checkpoint_every, resume, threads,
                   seed, quiet, "bi-encoder"),
    )
    _trained(train_biencoder(queries, texts, out, config), "bi-encoder")


@train_app.command("crossencoder")
def train_crossencoder_command(
    index_dir: TrainIndex,
    out: ModelOut,
    labels: LabelsIn = None,
    base_model: BaseModel = None,
    negatives: Annotated[int, typer.Option("--negatives", min=1, help="Negatives per positive.")]
    = 10,
    hard_negatives: Annotated[
        bool, typer.Option("--hard-negatives/--random-negatives", help="BM25 hard negatives first.")
    ] = True,
    bm25_depth: Annotated[int, typer.Option("--bm25-depth", min=1)] = 50,
    max_positives: Annotated[
        int, typer.Option("--max-positives", min=1, help="Positives sampled per query.")
    ] = 8,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1)] = 16,
    max_length: Annotated[int, typer.Option("--max-length", min=16)] = 128,
    types: Types = "finding,disease",
    epochs: Epochs = 1,
    lr: Lr = 2e-5,
    weight_decay: WeightDecay = 0.01,
    warmup: Warmup = 100,
    max_steps: MaxSteps = None,
    checkpoint_every: CheckpointEvery = 200,
    resume: Resume = False,
    threads: Threads = None,
    seed: Seed = 13,
    quiet: Quiet = False,
) -> None:
    """Fine-tune a cross-encoder on weak labels, 1:N with BM25 hard negatives (search --rerank)."""
    from clinsearch.index import Index
    from clinsearch.train.crossencoder import CrossEncoderConfig, cross_examples, train_crossencoder
    from clinsearch.train.pipeline import bm25_retriever, sentence_texts, training_data

    queries, _ = training_data(index_dir, labels_file=labels, phrasings=True,
                               types=_types(types), progress=not quiet)
    index = Index.open(index_dir)
    config = CrossEncoderConfig(
        base_model=str(base_model) if base_model else None, negatives=negatives,
        hard_negatives=hard_negatives, bm25_depth=bm25_depth, max_positives_per_query=max_positives,
        batch_size=batch_size, max_length=max_length,
        loop=_loop(epochs, lr, weight_decay, warmup, max_steps, checkpoint_every, resume, threads,
                   seed, quiet, "cross-encoder"),
    )
    examples = cross_examples(queries, sentence_texts(index), bm25_retriever(index), config)
    _trained(train_crossencoder(examples, out, config), "cross-encoder")


@train_app.command("terms")
def train_terms_command(
    out: ModelOut,
    lexicon: Annotated[
        Path | None, typer.Option("--lexicon", help="Lexicon YAML [default: the shipped one].")
    ] = None,
    base_model: BaseModel = None,
    temperature: Annotated[float, typer.Option("--temperature", help="SupCon temperature.")] = 0.05,
    batch_size: Annotated[int, typer.Option("--batch-size", min=2, help="Terms per batch.")] = 128,
    epochs: Epochs = 10,
    lr: Lr = 5e-5,
    weight_decay: WeightDecay = 0.01,
    warmup: Warmup = 100,
    max_steps: MaxSteps = None,
    checkpoint_every: CheckpointEvery = 200,
    resume: Resume = False,
    threads: Threads = None,
    seed: Seed = 13,
    quiet: Quiet = False,
) -> None:
    """Train the term encoder on the lexicon's synonym lists (concept search's unknown words)."""
    from clinsearch.annotate.lexicon import Lexicon
    from clinsearch.train.terms import TermConfig, synonym_groups, train_term_encoder

    groups = synonym_groups(Lexicon.load(lexicon))
    config = TermConfig(
        base_model=str(base_model) if base_model else None, temperature=temperature,
        batch_size=batch_size,
        loop=_loop(epochs, lr, weight_decay, warmup, max_steps, checkpoint_every, resume, threads,
                   seed, quiet, "term encoder"),
    )
    _trained(train_term_encoder(groups, out, config), "term encoder")


def _choice(option: str, value: str, allowed: tuple[str, ...]) -> None:
    """Refuse an option value outside ``allowed`` with a clear message."""
    if value not in allowed:
        raise InputError(f"{value!r} is not one of {', '.join(allowed)}", field=option)
