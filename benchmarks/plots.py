"""Draw the benchmark pictures from benchmarks/figures.yaml into docs/images/benchmarks/:
quality per method on each benchmark, warm and cold latency per method, and build time and peak
memory against corpus size. Each picture says where its figures come from (corpus, machine,
dates, commits).

    python -m benchmarks.plots [--format svg|png] [--out DIR]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from benchmarks.figures import FIGURES, Figure, load
from benchmarks.results_md import BENCHMARKS

OUT = BENCHMARKS.parent / "docs" / "images" / "benchmarks"
COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3")


def quality(figures: list[Figure]) -> list[tuple[str, list[Figure]]]:
    """The quality figures with a method and a series, per series, in the file's order."""
    panels: dict[str, list[Figure]] = defaultdict(list)
    for f in figures:
        if f.group == "quality" and f.method and f.series and f.number() is not None:
            panels[f.series].append(f)
    return list(panels.items())


def latency(figures: list[Figure], kind: str) -> list[Figure]:
    """The figures whose id starts ``latency.KIND.`` (``warm.p50``, ``warm.p95``, ``cold``)."""
    return [f for f in figures if f.id.startswith(f"latency.{kind}.") and f.method]


def scale(figures: list[Figure], kind: str) -> dict[str, list[Figure]]:
    """The figures whose id starts ``scale.KIND.`` (``cpu``, ``memory``) with a corpus size,
    per series, smallest corpus first."""
    lines: dict[str, list[Figure]] = defaultdict(list)
    for f in sorted(figures, key=lambda f: f.reports or 0):
        if (f.id.startswith(f"scale.{kind}.") and f.reports and f.series
                and f.number() is not None):
            lines[f.series].append(f)
    return dict(lines)


def source(figures: list[Figure]) -> str:
    """One line naming where the figures hold: machines, loads, dates and commits."""
    def spread(values: list[str]) -> str:
        unique = sorted(set(values))
        return unique[0] if len(unique) == 1 else f"{unique[0]} to {unique[-1]}"

    machines = ", ".join(sorted({f.machine for f in figures}))
    loads = sorted({str(f.load) for f in figures}, key=lambda v: float(v.split("-")[0]))
    machines += f" (load {loads[0]})" if len(loads) == 1 else f" (load {loads[0]} to {loads[-1]})"
    commits = ", ".join(sorted({f.commit for f in figures}))
    dates = spread([f.date[:10] for f in figures])
    return (f"{machines}; measured {dates} (UTC) at {commits}; "
            "data and commands: benchmarks/figures.yaml")


def draw_quality(figures: list[Figure], path: Path) -> None:
    """One horizontal bar panel per benchmark: each method's score, its value written beside."""
    import matplotlib.pyplot as plt

    panels = quality(figures)
    heights = [len(fs) for _, fs in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 1.0 + 0.42 * sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, (series, fs) in zip(axes[:, 0], panels, strict=True):
        values = [f.number() or 0.0 for f in fs]
        ax.barh(range(len(fs)), values, color=[_colour(f.method) for f in fs], height=0.7)
        ax.set_yticks(range(len(fs)), [f.method or "" for f in fs])
        ax.invert_yaxis()
        ax.set_xlim(0, 1.08)
        for y, (f, v) in enumerate(zip(fs, values, strict=True)):
            ax.text(v + 0.01, y, f.shown(), va="center", fontsize=8)
        ax.set_title(f"{series}: {fs[0].corpus}", fontsize=9, loc="left")
        ax.tick_params(labelsize=8)
        ax.spines[["top", "right"]].set_visible(False)
    axes[-1, 0].set_xlabel("score (higher is better; 1.0 is perfect)", fontsize=8)
    _finish(fig, "Quality per method on each benchmark", [f for _, fs in panels for f in fs],
            path)


def draw_latency(figures: list[Figure], path: Path) -> None:
    """Warm latency (p50 bars, p95 marks) and cold CLI latency per method, side by side."""
    import matplotlib.pyplot as plt

    p50, p95, cold = (latency(figures, k) for k in ("warm.p50", "warm.p95", "cold"))
    fig, (warm_ax, cold_ax) = plt.subplots(1, 2, figsize=(9, 3.6))
    methods = [f.method or "" for f in p50]
    tails = {f.method: f for f in p95}
    warm_ax.bar(methods, [f.number() or 0.0 for f in p50], color=[_colour(m) for m in methods])
    warm_ax.scatter(methods, [tails[m].number() if m in tails else None for m in methods],
                    marker="_", s=400, color="black", zorder=3)
    for x, f in enumerate(p50):
        tail = tails.get(f.method)
        top = max(f.number() or 0.0, tail.number() or 0.0 if tail else 0.0)
        label = f.shown() + (f"\np95 {tail.shown()}" if tail else "")
        warm_ax.annotate(label, (x, top), xytext=(0, 5), textcoords="offset points",
                         ha="center", va="bottom", fontsize=8)
    warm_ax.set_ylabel("ms per query (bar: p50, dash: p95)", fontsize=8)
    warm_ax.set_title("Warm, in one process\n" + _corpora(p50 + p95), fontsize=9)
    warm_ax.margins(y=0.2)
    names = [f.method or "" for f in cold]
    cold_ax.bar(names, [f.number() or 0.0 for f in cold],
                color=[_colour(n.split(",")[0]) for n in names])
    for x, f in enumerate(cold):
        cold_ax.text(x, f.number() or 0.0, f.shown(), ha="center", va="bottom", fontsize=8)
    cold_ax.set_ylabel("seconds, a fresh clinsearch process", fontsize=8)
    cold_ax.margins(y=0.1)
    cold_ax.set_title("Cold, from the command line\n" + _corpora(cold), fontsize=9)
    for ax in (warm_ax, cold_ax):
        ax.tick_params(labelsize=8)
        ax.tick_params(axis="x", labelrotation=15)
        ax.spines[["top", "right"]].set_visible(False)
    _finish(fig, "Query latency per method (lower is better)", p50 + p95 + cold, path)


def draw_scale(figures: list[Figure], path: Path) -> None:
    """Build CPU time (log-log) and peak memory against the corpus size, one line per corpus
    kind: CPU time and memory move little with the load of a shared machine, wall time does."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.8))
    shown: list[Figure] = []
    lines = {kind: scale(figures, kind) for kind in ("cpu", "memory")}
    names = list(dict.fromkeys(s for found in lines.values() for s in found))
    for ax, kind, label in ((axes[0], "cpu", "CPU seconds (user + system)"),
                            (axes[1], "memory", "peak memory of all its processes, MB")):
        largest = max((f.reports or 0 for fs in lines[kind].values() for f in fs), default=0)
        top = max((f.number() or 0.0 for fs in lines[kind].values() for f in fs
                   if f.reports == largest), default=0.0)
        for series, fs in lines[kind].items():
            n = names.index(series)
            xs, ys = [f.reports for f in fs], [f.number() for f in fs]
            ax.plot(xs, ys, marker="o", color=COLOURS[n % len(COLOURS)], label=series)
            for x, f in zip(xs, fs, strict=True):  # the largest corpus's labels to the left,
                right = x == largest  # the higher value's above the lower one's
                dy = (6 if f.number() == top else -8) if right else 4
                ax.annotate(f.shown(), (x, f.number() or 0.0), textcoords="offset points",
                            xytext=(-8 if right else 8, dy), fontsize=7,
                            color=COLOURS[n % len(COLOURS)],
                            ha="right" if right else "left", va="center")
            shown += fs
        ax.set_xscale("log")
        ax.set_xlabel("corpus size, reports (log scale)", fontsize=8)
        ax.set_ylabel(label, fontsize=8)
        ax.tick_params(labelsize=8)
        ax.spines[["top", "right"]].set_visible(False)
        ax.legend(fontsize=7, frameon=False, loc="upper left")
    axes[0].set_yscale("log")
    axes[0].set_ylabel("CPU seconds, user + system (log scale)", fontsize=8)
    axes[1].set_ylim(0, 1.25 * max(axes[1].get_ylim()[1], 1.0))
    axes[0].set_title("Build CPU time (lower is better)", fontsize=9)
    axes[1].set_title("Build peak memory (lower is better)", fontsize=9)
    _finish(fig, "Index build (clinsearch index) against corpus size", shown, path)


def _corpora(figures: list[Figure]) -> str:
    """The corpora of some figures, each once, in order."""
    return "; ".join(dict.fromkeys(f.corpus for f in figures))


def _colour(method: str | None) -> str:
    """One colour per method family, the same in every picture."""
    order = ("bm25", "dense", "concept", "hybrid", "cohort", "clinsearch", "medspaCy default")
    family = (method or "").split(",")[0].split(":")[0]
    return COLOURS[order.index(family) % len(COLOURS)] if family in order else COLOURS[-1]


def _finish(fig, title: str, figures: list[Figure], path: Path) -> None:  # type: ignore[no-untyped-def]
    """Title, the source line at the foot, and the file (reproducible: no date, fixed ids)."""
    import matplotlib.pyplot as plt

    fig.suptitle(title, fontsize=11, x=0.01, ha="left")
    fig.text(0.01, 0.012, source(figures), fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    metadata = {"Date": None} if path.suffix == ".svg" else {}
    fig.savefig(path, metadata=metadata, dpi=110)
    plt.close(fig)


def draw(figures: list[Figure], out: Path = OUT, fmt: str = "svg") -> list[Path]:
    """Draw every picture into ``out``; the paths written."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "clinsearch"  # the same figures give the same file
    matplotlib.rcParams["svg.fonttype"] = "none"  # text stays text: small, searchable files
    paths = []
    for name, drawer in (("quality", draw_quality), ("latency", draw_latency),
                         ("scale", draw_scale)):
        path = out / f"{name}.{fmt}"
        drawer(figures, path)
        paths.append(path)
    return paths


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--format", choices=("svg", "png"), default="svg")
    ap.add_argument("--out", type=Path, default=OUT, help=f"folder (default {OUT})")
    args = ap.parse_args()
    for path in draw(load(FIGURES), args.out, args.format):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
