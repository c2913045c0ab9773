"""Cold CLI start (issue 16, item 7): search and cohort on an existing index, fresh processes.

Run: ``python -m benchmarks.performance.bench_cold_start
    [--before REF] [--runs 5] [--work DIR] [--index DIR]``

Times ``clinsearch search`` (bm25 and concept) and ``clinsearch cohort`` on the bundled sample
and on IU X-ray (when ../shared data is present), or on the indexes given with ``--index`` (e.g.
one ``bench_storage.py`` built at 100k reports), each a fresh ``python -m clinsearch`` process,
``--runs`` times, alternating the code of this checkout with that of git ``REF`` (default
``main``, exported to a temporary folder) so both see the same machine load. Each side times
its own index of the sample and IU X-ray, built once under ``--work`` by that side's code, so a
``REF`` whose index format differs is timed on its own format; an index given with ``--index``
is read by both sides (both must read its format). Prints a
Markdown table of median wall and CPU (user + system) seconds with the ``before / after`` wall
ratio, and the machine's load averages (``uptime``) before and after: on a shared machine the
CPU seconds move less with the load than the wall time.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.performance.bench_storage import _timed_run, _uptime
from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path
from clinsearch.datasets import IU_XRAY, shared_data

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "clinsearch"]
QUERY = "right lower lobe pneumonia"
COHORT = 'pneumonia AND NOT "pleural effusion"'
COMMANDS = {
    "search bm25": ["search", "{index}", QUERY, "--method", "bm25", "--top", "5"],
    "search concept": ["search", "{index}", QUERY, "--method", "concept", "--top", "5"],
    "search concept, negated query": ["search", "{index}", "no pneumothorax", "--method",
                                      "concept", "--top", "5"],
    "cohort": ["cohort", "{index}", COHORT],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default="main", help="git ref to compare with (the 'before')")
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per command and side")
    parser.add_argument("--work", type=Path, default=Path("/tmp/bench_cold_start"),
                        help="folder for each side's indexes (built when missing)")
    parser.add_argument("--index", type=Path, action="append", default=[],
                        help="an existing index to time instead of the sample and IU X-ray ones"
                        " (repeatable)")
    parser.add_argument("--command", action="append", choices=list(COMMANDS), default=[],
                        help="time only this command (repeatable; default: all)")
    args = parser.parse_args()
    commands = {label: COMMANDS[label] for label in args.command} or COMMANDS
    with compared_sources(args.before) as sides:
        indexes = ({str(path): dict.fromkeys(sides, path) for path in args.index}
                   or _default_indexes(args.work, sides, _commit(args.before)))
        rows = [(name, label, _medians(sides, args.runs, paths, command))
                for name, paths in indexes.items() for label, command in commands.items()]
    print(f"\nmedians of {args.runs} fresh processes each, before = {args.before}\n")
    print("| index | command | wall before | wall after | before / after | CPU before |"
          " CPU after |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for name, label, times in rows:
        (before, cpu_before), (after, cpu_after) = times["before"], times["after"]
        print(f"| {name} | {label} | {before:.2f} s | {after:.2f} s | {before / after:.1f}x |"
              f" {cpu_before:.2f} s | {cpu_after:.2f} s |")


def _default_indexes(work: Path, sides: dict[str, Path], before: str
                     ) -> dict[str, dict[str, Path]]:
    """Each side's index of the bundled sample and of IU X-ray (when present), built under
    ``work`` by that side's code (the before side's folder named by its commit)."""
    corpora = {"sample": (sample_reports_path(), SAMPLE_FORMAT)}
    iu = shared_data(IU_XRAY)
    if iu is None:
        print("IU X-ray not found (../shared/data/iu_xray): the sample index only")
    else:
        corpora["IU X-ray"] = (iu, "iu-xray")
    folders = {"before": f"before-{before}", "after": "after"}
    return {name: {side: _index(work / folders[side] / name.replace(" ", "_").lower(), corpus,
                                fmt, src) for side, src in sides.items()}
            for name, (corpus, fmt) in corpora.items()}


def _index(folder: Path, corpus: Path, fmt: str, src: Path) -> Path:
    """An index of ``corpus`` at ``folder``, built by the code in ``src`` if not there yet."""
    if not (folder / "CURRENT").is_file():
        subprocess.run([*CLI, "index", str(corpus), "-f", fmt, "-o", str(folder), "--skip-bad"],
                       env=_env(src), check=True)
    return folder


def _commit(ref: str) -> str:
    """The commit id git ``ref`` names."""
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", ref], check=True,
                          capture_output=True, text=True).stdout.strip()


@contextmanager
def compared_sources(before: str) -> Iterator[dict[str, Path]]:
    """The ``src`` folders to compare, ``before`` (git ``before`` exported to a temporary
    folder) and ``after`` (this checkout), with the load averages printed before and after."""
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"before": _export(before, Path(tmp)), "after": ROOT / "src"}
        print(f"load before: {_uptime()}")
        yield sides
        print(f"load after: {_uptime()}")


def _export(ref: str, folder: Path) -> Path:
    """The ``src`` folder of git ``ref``, written under ``folder``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref, "src"],
                             check=True, capture_output=True).stdout
    tar_path = folder / "src.tar"
    tar_path.write_bytes(archive)
    with tarfile.open(tar_path) as tar:
        tar.extractall(folder / "before", filter="data")
    return folder / "before" / "src"


def _env(src: Path) -> dict[str, str]:
    """The environment that runs clinsearch from ``src``."""
    return {**os.environ, "PYTHONPATH": str(src)}


def _medians(sides: dict[str, Path], runs: int, indexes: dict[str, Path], command: list[str]
             ) -> dict[str, tuple[float, float]]:
    """Median wall and CPU (user + system) seconds of ``command`` per side on that side's
    index, the sides' runs alternating."""
    times: dict[str, list[tuple[float, float]]] = {side: [] for side in sides}
    for _ in range(runs):
        for side, src in sides.items():
            args = [a.format(index=indexes[side]) for a in command]
            times[side].append(_timed_run(args, _env(src), stderr=None))
    return {side: (statistics.median(w for w, _ in t), statistics.median(c for _, c in t))
            for side, t in times.items()}


if __name__ == "__main__":
    main()
