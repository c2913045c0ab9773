"""Evaluation commands: ``eval`` (score and compare runs) and ``bench build`` (make benchmarks)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from clinsearch.cli import app, console, err_console
from clinsearch.cli.corpus_input import read_corpus, reader_mapping, report_skips
from clinsearch.cli.method_flags import (
    check_flags_apply,
    given_options,
    method_errors_as_flags,
    options_for,
    with_method_flags,
)
from clinsearch.cli.options import Corpus, CorpusFormat, SkipBad
from clinsearch.errors import DataError, InputError

if TYPE_CHECKING:
    from clinsearch.evaluate.compare import Comparison
    from clinsearch.search.method_spec import MethodSpec


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


def _split_metrics(metrics: list[str] | None) -> list[str]:
    """Metric names from repeated and/or comma-separated ``--metric`` options."""
    return [n for m in metrics or [] for n in m.split(",") if n.strip()]


_EvalRuns = Annotated[
    list[Path] | None, typer.Argument(help="More run files (as --run).", show_default=False)
]
_EvalQrels = Annotated[
    Path | None, typer.Option("--qrels", help="TREC qrels file: qid iteration docid grade.")
]
_EvalRun = Annotated[
    list[Path] | None,
    typer.Option(
        "--run", help="TREC run file; repeat or list several. The first is the baseline."
    ),
]
_EvalMetric = Annotated[
    list[str] | None,
    typer.Option(
        "--metric",
        "-m",
        help="Metric(s): map, rprec, p@K, ndcg@K, bpref, mrr, recall@K, or an ir_measures "
        "name; repeat or comma-separate. Default: map rprec p@10 ndcg@10 bpref mrr "
        "recall@1 recall@5 recall@100.",
        show_default=False,
    ),
]
_EvalFmt = Annotated[str, typer.Option("--format", help="table | markdown | json.")]
_EvalGroups = Annotated[
    Path | None,
    typer.Option(
        "--groups",
        help="Queries TSV (qid, query[, kind]) whose kind column groups the results; "
        "without kind, 'no M' queries are negative and the others positive.",
    ),
]
_EvalPlotDir = Annotated[
    Path | None,
    typer.Option("--plot-dir", help="Write PNG plots into this folder (created if missing)."),
]
_EvalPerQuery = Annotated[
    bool, typer.Option("--per-query", help="Also show every query's values.")
]
_EvalTest = Annotated[
    str, typer.Option("--test", help="Paired test vs the first run: randomization | ttest.")
]
_EvalAlpha = Annotated[
    float, typer.Option("--alpha", help="Significance level for the * marker.")
]
_EvalAllowUnknown = Annotated[
    bool,
    typer.Option(
        "--allow-unknown-queries",
        help="Ignore (with a warning) run queries the qrels do not know, instead of failing.",
    ),
]
_EvalIndex = Annotated[
    Path | None,
    typer.Option("--index", help="Index mode: search this index instead of reading runs."),
]
_EvalQueriesFile = Annotated[
    Path | None,
    typer.Option("--queries", help="Index mode: queries TSV (qid, query[, kind])."),
]
_EvalMethod = Annotated[
    list[str] | None,
    typer.Option(
        "--method",
        help="Index mode: search method, repeatable; NAME or NAME:opt=value,... "
        "(e.g. bm25, bm25:whole_report=true). The first is the baseline.",
        show_default=False,
    ),
]
_EvalLevel = Annotated[
    str, typer.Option("--level", help="Index mode: sentence | report | visit | patient.")
]
_EvalTop = Annotated[int, typer.Option("--top", help="Index mode: hits kept per query.")]
_EvalSaveRuns = Annotated[
    Path | None,
    typer.Option("--save-runs", help="Index mode: write each method's TREC run into this"
                 " folder (created if missing)."),
]
_EvalForce = Annotated[
    bool, typer.Option("--force", help="Replace existing files in --save-runs / --plot-dir.")
]


@app.command("eval")
@with_method_flags
def eval_command(
    runs: _EvalRuns = None,
    qrels: _EvalQrels = None,
    run: _EvalRun = None,
    metric: _EvalMetric = None,
    fmt: _EvalFmt = "table",
    groups: _EvalGroups = None,
    plot_dir: _EvalPlotDir = None,
    per_query: _EvalPerQuery = False,
    test: _EvalTest = "randomization",
    alpha: _EvalAlpha = 0.05,
    allow_unknown: _EvalAllowUnknown = False,
    index: _EvalIndex = None,
    queries_file: _EvalQueriesFile = None,
    method: _EvalMethod = None,
    level: _EvalLevel = "report",
    top: _EvalTop = 1000,
    save_runs: _EvalSaveRuns = None,
    force: _EvalForce = False,
    **flags: Any,
) -> None:
    """Score runs against qrels and compare them side by side, per query group.

    Run mode: clinsearch eval --qrels q.qrels --run bm25.run dense.run --groups queries.tsv

    Index mode: clinsearch eval --index DIR --queries q.tsv --qrels q.qrels --method bm25
    --method bm25:whole_report=true (each method searches the index; the first is the baseline;
    a method option given as a flag applies to every method that takes it).
    """
    from clinsearch.evaluate.evaluation import evaluate
    from clinsearch.evaluate.significance import TESTS

    if fmt not in ("table", "markdown", "json"):
        raise InputError(f"unknown format {fmt!r}; use table, markdown or json", field="--format")
    if test not in TESTS:
        raise InputError(f"unknown test {test!r}; use randomization or ttest", field="--test")
    if qrels is None:
        raise InputError("--qrels is required", field="--qrels")
    specs, written = _method_specs(method or [], given_options(flags), index is not None)
    with method_errors_as_flags(written):
        done = evaluate(
            qrels, runs=[*(run or []), *(runs or [])], index=index,
            queries=queries_file, methods=specs, level=level, top=top, save_runs=save_runs,
            metrics=_split_metrics(metric), groups=groups, plot_dir=plot_dir, force=force,
            allow_unknown=allow_unknown)
    for warning in done.comparison.warnings:
        err_console.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)
    _print_comparison(done.comparison, fmt, test, alpha, per_query)
    for path in done.written:
        err_console.print(f"wrote {path}", highlight=False)


def _method_specs(methods: list[str], options: dict[str, Any], index_mode: bool
                  ) -> tuple[list[MethodSpec], set[str]]:
    """The ``--method`` specs with the options given as flags applied to each method that
    takes them, and the option names the specs wrote (their errors name them as written)."""
    from clinsearch.search.registry import parse_method

    if options and not index_mode:
        raise InputError("method options need index mode (--index)", field="--index")
    specs = [parse_method(m, "--method") for m in methods]
    check_flags_apply([s.method for s in specs], options)
    written = {name for s in specs for name in s.options}
    return [s.with_options(**options_for(s.method, options)) for s in specs], written


# --- benchmarks -------------------------------------------------------------------------------

bench_app = typer.Typer(help="Evaluation benchmarks.", no_args_is_help=True)
build_app = typer.Typer(
    help="Build a benchmark: OUT/queries.tsv (qid, query, kind) and OUT/qrels.txt (TREC).",
    no_args_is_help=True,
)
app.add_typer(bench_app, name="bench")
bench_app.add_typer(build_app, name="build")

BenchOut = Annotated[Path, typer.Option(
    "--out", "-o", help="Folder to write the benchmark into (created if missing).")]
BenchForce = Annotated[
    bool, typer.Option("--force", help="Replace the benchmark's files in --out if they exist.")
]
LexiconPath = Annotated[
    Path | None, typer.Option("--lexicon", help="Lexicon YAML (default: the shipped one).")
]
Seed = Annotated[int, typer.Option("--seed", help="Random seed (the output is deterministic).")]


def _check_out(out: Path, force: bool, extra: tuple[str, ...] = (), folds: int = 0) -> None:
    """Refuse, before the work, a benchmark folder whose files may not be written (exports:
    never over a file without --force, never inside an index)."""
    from clinsearch.evaluate.bench.benchmark import QRELS_FILE, QUERIES_FILE
    from clinsearch.exports import check_export_path, export_folder

    folder = export_folder(out)
    bench = (QUERIES_FILE, QRELS_FILE)
    paths = [folder / name for name in (*bench, *extra)]
    paths += [folder / f"fold{k}" / name for k in range(1, folds + 1) for name in bench]
    for path in paths:
        if path.parent.is_dir():
            check_export_path(path, force)


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
    force: BenchForce = False,
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
    _check_out(out, force)
    reports = list(read_reports(path, "iu-xray", skip_bad=True))
    bench = iu_mesh_benchmark(reports, Lexicon.load(lexicon), MeshMap.load(mesh_map), min_relevant)
    _wrote(write_benchmark(out, bench, force), bench.summary())


@build_app.command("cmc2007")
def bench_cmc2007(
    out: BenchOut,
    xml: Annotated[
        Path | None,
        typer.Argument(help="CMC 2007 XML (default: ../shared/data/cmc2007/reports_dev.xml)."),
    ] = None,
    query_list: Annotated[
        Path | None,
        typer.Option("--query-list", help="Code query list YAML (default: the shipped one)."),
    ] = None,
    min_relevant: Annotated[
        int, typer.Option("--min-relevant", help="Fewest coded reports a code's query needs.")
    ] = 2,
    force: BenchForce = False,
) -> None:
    """CMC 2007 report level: one query per ICD-9-CM majority code, from its title.

    Relevant: the coded reports with the code among their majority codes; every other coded
    report is judged not relevant; kind = renal or other. Index the reports with
    --format cmc2007-coded (ids are the doc ids).
    """
    from clinsearch.corpus.readers import read_reports
    from clinsearch.datasets import CMC2007, shared_data
    from clinsearch.evaluate.bench.benchmark import write_benchmark
    from clinsearch.evaluate.bench.cmc2007 import cmc_benchmark, load_code_queries, report_codes

    path = xml or shared_data(CMC2007)
    if path is None:
        raise InputError("give the CMC 2007 XML (not found under ../shared/data)", field="XML")
    _check_out(out, force)
    queries = load_code_queries(query_list)
    gold = report_codes(read_reports(path, "cmc2007-coded"))
    if not gold:
        raise InputError("no coded reports", file=path)
    bench = cmc_benchmark(gold, queries, min_relevant)
    _wrote(write_benchmark(out, bench, force), bench.summary())


@build_app.command("weak-sentences")
def bench_weak_sentences(
    index: Annotated[Path, typer.Option("--index", help="Index whose sentences are labelled.")],
    out: BenchOut,
    lexicon: LexiconPath = None,
    min_relevant: Annotated[
        int, typer.Option("--min-relevant", help="Fewest relevant sentences a query needs.")
    ] = 3,
    seed: Seed = 0,
    force: BenchForce = False,
) -> None:
    """Sentence level, weak labels ([Shi2022]): "M" / "no M" queries from annotator findings.

    Writes OUT/queries.tsv and OUT/qrels.txt for all queries, OUT/fold1 and OUT/fold2 with the
    queries of two halves of the findings that share no finding, and OUT/split.tsv.
    """
    from clinsearch import Index
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.annotate.lexicon import Lexicon
    from clinsearch.evaluate.bench.benchmark import write_benchmark, write_split
    from clinsearch.evaluate.bench.weak import index_sentence_findings, weak_benchmark

    _check_out(out, force, ("split.tsv",), folds=2)
    annotator = Annotator(Lexicon.load(lexicon))
    try:
        weak = weak_benchmark(
            index_sentence_findings(Index.open(index), annotator), min_relevant, seed=seed
        )
    except DataError as exc:  # too few labels in this index: name it
        raise InputError(str(exc), file=index) from None
    paths = write_benchmark(out, weak.all, force)
    for k, fold in enumerate(weak.folds, start=1):
        paths += write_benchmark(out / f"fold{k}", fold, force)
    paths.append(write_split(out, weak.split, force))
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
    force: BenchForce = False,
) -> None:
    """Passage level ([CAPR2021]): (entity, section) queries over the sections of a corpus.

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

    _check_out(out, force, ("passages.jsonl",))
    stats = ReadStats()
    reports = read_corpus(corpus, fmt, skip_bad, stats, reader_mapping(*[None] * 7))
    docs = list(Segmenter().segment_many(reports))
    texts = [s.text for d in docs for s in d.sentences]
    found = iter(annotate_unique(Annotator(Lexicon.load(lexicon)), texts))
    labelled = [(d, [next(found) for _ in d.sentences]) for d in docs]
    try:
        built = passage_benchmark(labelled, max_relevant, max_queries, seed)
    except DataError as exc:  # too few passages in this corpus: name it
        raise InputError(str(exc), file=corpus) from None
    paths = [write_passages(out / "passages.jsonl", built.passages, force)]
    paths += write_benchmark(out, built.bench, force)
    _wrote(paths, f"{len(built.passages)} passages; {built.bench.summary()}")
    report_skips(stats)
