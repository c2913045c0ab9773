"""One evaluation, as ``clinsearch eval`` runs it: score TREC runs (read from files, or made by
searching an index with each method) against qrels, compared side by side per query group,
with the runs and plots written where asked. Every path is checked before the work starts, so a
bad one fails at once and nothing is half-written."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from clinsearch.errors import InputError
from clinsearch.evaluate.compare import Comparison, compare_runs
from clinsearch.evaluate.measures import DEFAULT_MEASURES, parse_measure
from clinsearch.evaluate.plots import plot_paths, write_plots
from clinsearch.evaluate.runner import index_runs
from clinsearch.exports import check_export_path, export_folder
from clinsearch.index import IndexStore
from clinsearch.query_file import read_benchmark_queries
from clinsearch.search.method_spec import MethodSpec
from clinsearch.search.session import Index
from clinsearch.trec import Run, read_qrels, read_run, write_run


@dataclass
class Evaluation:
    """The comparison of the runs, and the files written (saved runs, then plots)."""

    comparison: Comparison
    runs: list[Run]
    written: list[Path] = field(default_factory=list)


def evaluate(
    qrels: Path,
    *,
    runs: Sequence[Path] = (),
    index: Path | IndexStore | None = None,
    queries: Path | None = None,
    methods: Sequence[MethodSpec] = (),
    level: str = "report",
    top: int = 1000,
    save_runs: Path | None = None,
    metrics: Sequence[str] = (),
    groups: Path | None = None,
    plot_dir: Path | None = None,
    force: bool = False,
    allow_unknown: bool = False,
) -> Evaluation:
    """Score ``runs`` (files) or, given an ``index`` (a folder, or one opened), the runs of
    each of ``methods`` over the ``queries`` file (saved into ``save_runs`` if given) against
    ``qrels``; ``metrics`` are measure names (default: ``DEFAULT_MEASURES``); ``groups`` (run
    mode; in index mode the queries) groups the results by the queries' kind; plots go into
    ``plot_dir``."""
    if (index is None) == (not runs):
        raise InputError("give run files (--run) or an index (--index), not both", field="--run")
    measures = [parse_measure(n) for n in metrics or DEFAULT_MEASURES]
    plots = plot_paths(export_folder(plot_dir)) if plot_dir is not None else []
    for path in plots:
        check_export_path(path, force)
    judgements = read_qrels(qrels)
    written: list[Path] = []
    if index is not None:
        if queries is None or not methods:
            raise InputError("--index needs --queries and at least one --method", field="--index")
        asked = read_benchmark_queries(queries)
        paths = _run_paths(methods, save_runs, force)
        opened = Index.open(index) if isinstance(index, Path) else index
        loaded = index_runs(opened, asked, methods, level, top)
        for run, path in zip(loaded, paths, strict=False):
            write_run(path, run, force=force)
            written.append(path)
    else:
        loaded = [read_run(p) for p in runs]
        asked = read_benchmark_queries(groups) if groups is not None else None
    comp = compare_runs(judgements, loaded, measures, asked, allow_unknown=allow_unknown)
    if plot_dir is not None:
        written += write_plots(comp, judgements, loaded, plot_dir, force)
    return Evaluation(comp, loaded, written)


def _run_paths(methods: Sequence[MethodSpec], save: Path | None, force: bool) -> list[Path]:
    """Where each method's run is saved (``SAVE/LABEL.run``), checked before any search."""
    if save is None:
        return []
    folder = export_folder(save)
    paths = [folder / (re.sub(r"[^\w.=-]+", "_", s.label) + ".run") for s in methods]
    for path in paths:
        if paths.count(path) > 1:
            raise InputError(f"two methods would save their runs to {path}", field="--method")
        check_export_path(path, force)
    return paths
