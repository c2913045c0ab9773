"""The ``clinsearch`` command line: a thin layer over the Python API."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from typer.core import TyperGroup

from clinsearch.errors import ClinsearchError

if TYPE_CHECKING:
    from clinsearch.evaluate.compare import Comparison

err_console = Console(stderr=True)


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


def main() -> None:
    """Console-script entry point."""
    app()


# --- evaluation -------------------------------------------------------------------------------


def _print_comparison(comp: Comparison, fmt: str, test: str, alpha: float, per_query: bool) -> None:
    """Print a comparison to stdout as a rich table, Markdown or JSON."""
    from clinsearch.evaluate import render

    out = Console()
    if not out.is_terminal:  # redirected: keep wide tables whole rather than truncated
        out = Console(width=max(out.width, 200))
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
) -> None:
    """Score TREC runs against qrels and compare them side by side, per query group.

    Example: clinsearch eval --qrels q.qrels --run bm25.run dense.run --groups queries.tsv
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
    if not paths:
        raise InputError("give at least one run file with --run", field="--run")
    measures = [parse_measure(n) for n in _split_metrics(metric)]
    judgements = read_qrels(qrels)
    loaded = [read_run(p) for p in paths]
    queries = read_queries(groups) if groups is not None else None
    comp = compare_runs(judgements, loaded, measures, queries, allow_unknown=allow_unknown)
    for warning in comp.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    _print_comparison(comp, fmt, test, alpha, per_query)
    if plot_dir is not None:
        for path in write_plots(comp, judgements, loaded, plot_dir):
            err_console.print(f"wrote {path}", highlight=False)
