"""PNG plots of a comparison: metric bars per query group, and recall-at-depth curves."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure

from clinsearch.evaluate.compare import Comparison
from clinsearch.evaluate.measures import RECALL_DEPTHS, recall_curve
from clinsearch.exports import export_folder, export_path
from clinsearch.trec import Qrels, Run

BARS_PNG = "metrics_by_group.png"
CURVES_PNG = "recall_at_depth.png"
DPI = 72


def _save(fig: Figure, path: Path, force: bool) -> Path:
    """Save ``fig`` as a PNG export (atomic, private, replaced only if ``force``)."""
    with export_path(path, force=force) as tmp:
        fig.savefig(tmp, dpi=DPI, format="png")
    return path


def _grid(n: int) -> tuple[int, int]:
    """Rows and columns for ``n`` subplots, at most three across."""
    cols = min(3, n)
    return math.ceil(n / cols), cols


def plot_group_bars(comp: Comparison, path: str | Path, force: bool = False) -> Path:
    """One panel per measure: groups on the x axis, one bar per run (mean over the group)."""
    rows, cols = _grid(len(comp.measures))
    fig = Figure(figsize=(4.2 * cols, 3.0 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    groups = list(comp.groups)
    width = 0.8 / len(comp.runs)
    for ax, measure in zip(axes, comp.measures, strict=False):
        for i, run in enumerate(comp.runs):
            means = [comp.mean(run, measure, g) for g in groups]
            xs = [g + (i - (len(comp.runs) - 1) / 2) * width for g in range(len(groups))]
            ax.bar(xs, [0 if math.isnan(m) else m for m in means], width, label=run)
        ax.set_title(measure)
        ax.set_xticks(range(len(groups)), [f"{g}\n(n={len(comp.groups[g])})" for g in groups])
        ax.set_ylim(0, 1)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[len(comp.measures) :]:
        ax.set_visible(False)
    fig.legend(
        *axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=len(comp.runs)
    )
    return _save(fig, Path(path), force)


def plot_recall_curves(
    comp: Comparison,
    qrels: Qrels,
    runs: Sequence[Run],
    path: str | Path,
    depths: Sequence[int] = RECALL_DEPTHS,
    force: bool = False,
) -> Path:
    """One panel per query group: mean Recall@k against depth k (log scale), a line per run."""
    longest = max(len(docs) for run in runs for docs in run.scores.values())
    depths = sorted(depths)
    reach = next((i for i, d in enumerate(depths) if d >= longest), len(depths) - 1)
    depths = depths[: reach + 1]
    curves = {run.name: recall_curve(qrels, run, depths) for run in runs}
    rows, cols = _grid(len(comp.groups))
    fig = Figure(figsize=(4.2 * cols, 3.0 * rows), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    for ax, (group, qids) in zip(axes, comp.groups.items(), strict=False):
        for name, curve in curves.items():
            means = [sum(curve[d][q] for q in qids) / len(qids) if qids else 0.0 for d in depths]
            ax.plot(depths, means, marker="o", markersize=3, label=name)
        ax.set_xscale("log")
        ax.set_xticks(depths, [str(d) for d in depths])
        ax.minorticks_off()
        ax.set_title(f"{group} (n={len(qids)})")
        ax.set_xlabel("depth k")
        ax.set_ylabel("Recall@k")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes[len(comp.groups) :]:
        ax.set_visible(False)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=len(runs))
    return _save(fig, Path(path), force)


def plot_paths(directory: str | Path) -> list[Path]:
    """The files ``write_plots`` writes into ``directory``."""
    return [Path(directory) / BARS_PNG, Path(directory) / CURVES_PNG]


def write_plots(comp: Comparison, qrels: Qrels, runs: Sequence[Run], directory: str | Path,
                force: bool = False) -> list[Path]:
    """Write both plots into the export folder ``directory`` (created if missing; existing
    plots replaced only if ``force``); returns their paths."""
    bars, curves = plot_paths(export_folder(Path(directory)))
    return [plot_group_bars(comp, bars, force),
            plot_recall_curves(comp, qrels, runs, curves, force=force)]
