"""Query commands: ``search``, ``methods`` (the search methods and their options) and
``explain-query`` (how a query is understood)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from clinsearch.cli import app, console
from clinsearch.cli.method_flags import (
    check_flags_apply,
    given_options,
    method_errors_as_flags,
    with_method_flags,
)
from clinsearch.cli.options import (
    DeviceOpt,
    IndexDir,
    TermModel,
)
from clinsearch.errors import ClinsearchError
from clinsearch.progress import track
from clinsearch.terminal import printable

_BATCH_QUERIES = 64


SearchPolarity = Annotated[
    str,
    typer.Option(
        help="query: concept search keeps the polarity the query states, other methods do not"
        " filter; any: results must mention the query's concepts; present / absent: results"
        " must state them present / absent, with any method (uses the findings table)."
    ),
]


@app.command("search")
@with_method_flags
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
    polarity: SearchPolarity = "query",
    tag: Annotated[
        str | None, typer.Option(help="trec: run tag (default clinsearch-METHOD).")
    ] = None,
    device: DeviceOpt = None,
    **flags: Any,
) -> None:
    """Search an index with a query, or a file of queries (batch mode, e.g. --format trec)."""
    from clinsearch import Index
    from clinsearch.query_file import Query, read_queries
    from clinsearch.search.no_hits import no_hits_reason
    from clinsearch.search.output import OUTPUT_FORMATS
    from clinsearch.search.polarity import polarity_options
    from clinsearch.search.registry import parse_method
    from clinsearch.search.tiers import tier_counts, with_triggers
    from clinsearch.units import check_level

    if (query is None) == (queries is None):
        raise ClinsearchError("give a query or --queries FILE (not both)")
    check_level(level)
    if output not in OUTPUT_FORMATS:
        raise ClinsearchError(
            f"unknown output format {output!r}; choose one of {', '.join(OUTPUT_FORMATS)}"
        )
    index = Index.open(index_dir)
    method = method or index.default_method
    spec = parse_method(method, "--method")
    options = given_options(flags)
    check_flags_apply([spec.method], options)
    batch = read_queries(queries) if queries else [Query("1", query or "")]
    # the command's options join the spec's, in the one spec every method is built from
    written = set(spec.options)
    spec = spec.with_options(**options | polarity_options(spec.method, polarity))
    run_tag = tag or f"clinsearch-{method}"
    chunks = [batch[i : i + _BATCH_QUERIES] for i in range(0, len(batch), _BATCH_QUERIES)]
    for chunk in track(chunks, "searching", total=len(chunks), enabled=len(chunks) > 1):
        with method_errors_as_flags(written):
            results = index.search_many([q.text for q in chunk], level, top, spec)
        for q, hits in zip(chunk, results, strict=True):
            reason = "" if hits else no_hits_reason(index, q.text)
            tiers = []
            if output != "trec":  # run lines stay plain; tables and JSON show tiers and cues
                hits = with_triggers(index, hits)
                tiers = tier_counts(index.session, q.text, level, spec)
            _print_hits(q.qid, q.text, level, method, hits, output, run_tag,
                        lines=queries is not None, empty_reason=reason, tiers=tiers)


@app.command("methods")
def methods_command() -> None:
    """List the search methods and the options each takes (for --method NAME:key=value,...)."""
    from clinsearch.search.method_help import methods_help

    typer.echo(methods_help(console.width), nl=False)


@app.command("explain-query")
def explain_query_command(
    query: Annotated[str, typer.Argument(help="A free-text query.", show_default=False)],
    index_dir: Annotated[
        Path | None, typer.Option("--index", help="Use this index's lexicon.")
    ] = None,
    lexicon: Annotated[
        Path | None, typer.Option(help="Lexicon file (default: the shipped chest X-ray one).")
    ] = None,
    term_model: TermModel = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """Show how a query is understood: finding patterns, and unknown words mapped to the lexicon."""
    from clinsearch.search.concept.tools import (
        checked_term_model,
        concept_tools,
        index_concept_tools,
    )
    from clinsearch.search.explain_query import explain_table, explain_text

    if index_dir is not None and lexicon is not None:
        raise ClinsearchError("give --index or --lexicon, not both")
    if index_dir is not None:
        from clinsearch import Index

        tools = index_concept_tools(Index.open(index_dir), term_model)
    else:
        tools = concept_tools(str(lexicon) if lexicon else None,
                              checked_term_model(term_model) if term_model else None)
    explained = explain_text(tools, query)
    if as_json:
        typer.echo(json.dumps(explained, indent=2, ensure_ascii=False))
    else:
        console.print(explain_table(explained))


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
    tiers: Sequence[Any] = (),
) -> None:
    """Print one query's hits as a table, JSON (one line each in batch mode) or TREC lines;
    a query with no hits says why (in the table, the JSON, or on stderr beside TREC lines);
    ``tiers``: the units per tier (``search.tiers.TierCount``), in the caption and the JSON."""
    from clinsearch.search.output import hits_table, json_record, json_text, trec_lines

    if output == "table":
        title = escape(printable(f"{qid}: {query}" if lines else query))
        console.print(hits_table(hits, level, title=title, empty_reason=escape(empty_reason),
                                 tiers=tiers))
    elif output == "json":
        typer.echo(json_text(json_record(qid, query, level, method, hits, empty_reason, tiers),
                             lines=lines))
    else:
        for line in trec_lines(qid, hits, tag):
            typer.echo(line)
        if empty_reason:
            typer.echo(f"query {qid}: no matches: {empty_reason}", err=True)
