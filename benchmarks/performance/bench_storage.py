"""Benchmark the storage engine at scale on a seeded synthetic corpus (issue 16).

Run: ``python -m benchmarks.performance.bench_storage --reports 1000000 [--workers N] [--work DIR]``

The corpus recombines sentences of IU X-ray (when ../shared data is present, else the bundled
sample), about half of them with a distinct ending (``clinsearch.corpus.synthetic``); it streams
to a JSON Lines file, so any size fits in memory. Each step is a ``clinsearch`` command whose
wall time, peak memory of the whole process tree (sampled from /proc) and machine load
(``uptime`` before and after) are recorded: ``index``, ``add`` of 1,000 reports, ``delete`` of
1,000, ``check``, ``optimize`` (when the command exists) with the index size after the merge
against the fresh build's; then warm query p50/p95 per method and cohort count time (in one
process) and cold CLI search/cohort (a fresh process each). Every child's progress lines go to
``STEP.log`` in the work folder, each stamped with the elapsed seconds and the tree's memory then,
so the stages of a build can be timed, and every ~10 s with the memory then (whole tree and
the command's own process); the JSON result is rewritten after every step, so a run
cut short still says how far it got.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from benchmarks.figures import record
from clinsearch import Index
from clinsearch.corpus.model import Report
from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.synthetic import default_source, sentence_pool, synthetic_reports
from clinsearch.jsonl import write_json_lines
from clinsearch.parallel import available_cores
from clinsearch.search.cohort import Cohort

QUERIES = (
    "pleural effusion", "no pneumothorax", "cardiomegaly", "right lower lobe pneumonia",
    "atelectasis", "pulmonary edema", "no acute cardiopulmonary abnormality", "nodule",
    "consolidation", "degenerative changes of the spine", "hyperinflated lungs", "granuloma",
    "no focal consolidation", "scarring", "pacemaker", "enlarged heart", "emphysema",
    "possible pneumonia", "left basilar opacity", "tortuous aorta",
)  # fmt: skip
COHORTS = ("pneumothorax", 'cardiomegaly AND NOT "pleural effusion"', "pneumonia OR atelectasis")
METHODS = ("bm25", "concept")
_CHILD_ENV = dict(os.environ)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=available_cores())
    parser.add_argument("--seed", type=int, default=16)
    parser.add_argument("--reports-per-patient", type=int, default=3,
                        help="reports to a patient in the corpus (1: as many patients as"
                        " reports; the cohort engine's patient and visit units grow with them)")
    parser.add_argument("--work", type=Path, default=None, help="folder for corpus and index")
    parser.add_argument("--build-only", action="store_true", help="measure only the build")
    parser.add_argument("--dense", default=None, metavar="MODEL",
                        help="also embed every sentence with MODEL (a folder, or static) and"
                        " time dense and hybrid queries")
    parser.add_argument("--queries-only", action="store_true",
                        help="measure only the warm and cold queries, on the index a full run"
                        " left in --work (result in bench_storage_queries.json)")
    parser.add_argument("--no-record", action="store_true",
                        help="leave benchmarks/figures.yaml as it is (else the build, its peak"
                        " memory and the add and warm-query figures are recorded there)")
    parser.add_argument(
        "--child-src", type=Path, default=None,
        help="run the clinsearch commands from this src folder (e.g. an older checkout's; with"
        " --workers 0 no --workers option is passed)")
    args = parser.parse_args()
    if args.reports_per_patient < 1:
        parser.error("--reports-per-patient must be at least 1")
    if args.child_src is not None:
        _CHILD_ENV["PYTHONPATH"] = str(args.child_src.resolve())
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-storage-"))
    work.mkdir(parents=True, exist_ok=True)
    src = args.child_src or Path(__file__).resolve().parents[2] / "src"
    name = "bench_storage_queries.json" if args.queries_only else "bench_storage.json"
    bench = _Bench(work / name, {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} ({available_cores()} cores, {platform.machine()})",
        "commit": _commit(src),
        "clinsearch_src": str(src),
        "reports": args.reports,
        "reports_per_patient": args.reports_per_patient,
        "workers": args.workers,
        "command": " ".join(sys.argv),
        "dense": args.dense,
        "load_before": _uptime(),
    })
    index = work / "index"
    methods = (*METHODS, "dense", "hybrid") if args.dense else METHODS
    if args.queries_only:
        with Index.open(index) as opened:
            bench.record("reports", opened.manifest.counts.reports)
        _queries(bench, index, methods)
        print(json.dumps(bench.result, indent=2))
        return
    source, fmt = default_source()
    bench.result["source"] = fmt
    corpus, extra = work / "corpus.jsonl", work / "extra.jsonl"
    with bench.step("corpus"):
        pool = sentence_pool(read_reports(source, fmt, skip_bad=True))
        for path, count, start in ((corpus, args.reports, 0), (extra, 1000, args.reports)):
            write_json_lines(path, (_record(r) for r in synthetic_reports(
                pool, count, args.seed, start=start,
                reports_per_patient=args.reports_per_patient)), force=True)
    shutil.rmtree(index, ignore_errors=True)
    workers = ["--workers", str(args.workers)] if args.workers else []
    dense = ["--dense", "--model", args.dense] if args.dense else []
    bench.run("index", ["index", str(corpus), "--format", "jsonl", "-o", str(index), *workers,
                        *dense])
    fresh_mb = bench.size("index_mb", index)
    if not args.build_only:
        bench.run("add_1000", ["add", str(index), str(extra), "--format", "jsonl", *workers])
        ids = work / "delete.txt"
        ids.write_text("\n".join(f"syn-{i}" for i in range(0, args.reports,
                                                           max(1, args.reports // 1000))))
        bench.run("delete_1000", ["delete", str(index), "--ids-file", str(ids)])
        bench.size("index_mb_after_changes", index)
        bench.run("check", ["check", str(index)])
        if _has_command("optimize"):
            bench.run("optimize", ["optimize", str(index)])
            merged_mb = bench.size("index_mb_after_optimize", index)
            bench.record("optimized_vs_fresh", round(merged_mb / fresh_mb, 3))
        else:
            bench.record("optimize", "not available (no `clinsearch optimize` in this checkout)")
        _queries(bench, index, methods)
    bench.record("load_after", _uptime())
    print(json.dumps(bench.result, indent=2))
    if not args.no_record and args.child_src is None:
        record_figures(bench.result, " ".join(["python -m benchmarks.performance.bench_storage",
                                               *sys.argv[1:]]))


def record_figures(result: dict[str, Any], command: str) -> None:
    """Put the run's build time and peak memory (and, after a full run, the add, warm query
    and cohort count figures) into benchmarks/figures.yaml, one entry per corpus size."""
    reports, per = result["reports"], result["reports_per_patient"]
    size = _size_name(reports)
    key = size + ("" if per == 3 else f"-{per}pp")
    people = "" if per == 3 else f", {reports // per:,} patients"
    corpus = f"Recombined {size.upper()}, {per} report{'s' if per > 1 else ''} per patient"
    load = float(result["load_before"].split("load average:")[1].split(",")[0])  # at the start
    common = {"group": "scale", "corpus": corpus, "command": command, "load": load}
    series = f"recombined, {corpus.split(', ', 1)[1]}"
    steps = result["steps"]
    build = steps["index"]
    record(f"scale.build.{key}", build["s"], figure=f"build, {size.upper()} reports{people}",
           unit="s", note=f"wall time; CPU {build['cpu_s']:,} s", **common)
    # CPU time and memory move little with the machine's load: the scale picture draws them
    record(f"scale.cpu.{key}", build["cpu_s"], unit="s", reports=reports, series=series,
           figure=f"build CPU time (user + system), {size.upper()} reports{people}", **common)
    record(f"scale.memory.{key}", build["peak_mb"], unit="MB", reports=reports, series=series,
           figure=f"build peak memory, {size.upper()} reports{people}", **common)
    if "add_1000" in steps:
        record(f"scale.add.{key}", steps["add_1000"]["s"], unit="s",
               figure=f"add 1,000 reports to {size.upper()}{people}", **common)
    warm = result.get("warm_ms", {})
    for method in (m for m in METHODS if m in warm):
        record(f"scale.warm-{method}.{key}", warm[method]["p50"], unit="ms", method=method,
               figure=f"warm query p50 at {size.upper()}, {method}, first pass",
               note=f"{warm[method]['again_p50']} ms again", **common)
    if "cohort count" in warm:
        record(f"scale.cohort.{key}", warm["cohort count"]["p50"], unit="ms", method="cohort",
               figure=f"cohort count p50 at {size.upper()}{people}", **common)


def _size_name(reports: int) -> str:
    """A corpus size in short: ``1m``, ``100k``, ``2500``."""
    for unit, word in ((1_000_000, "m"), (1000, "k")):
        if reports % unit == 0:
            return f"{reports // unit}{word}"
    return str(reports)


def _queries(bench: _Bench, index: Path, methods: tuple[str, ...]) -> None:
    """The warm queries of ``methods`` in one process, then the cold CLI commands."""
    with bench.step("warm_queries"):
        bench.record("warm_ms", _warm(index, methods))
    with bench.step("cold_cli"):
        bench.record("cold_s", {
            "search bm25": _cold(["search", str(index), "pleural effusion", "--method", "bm25",
                                  "--format", "trec"]),
            "search concept": _cold(["search", str(index), "pleural effusion", "--method",
                                     "concept", "--format", "trec"]),
            "cohort": _cold(["cohort", str(index), "pneumothorax", "--json"]),
        })


class _Bench:
    """The result so far, rewritten to the JSON file ``path`` (in the work folder) after every
    step (a run cut short keeps what it measured)."""

    def __init__(self, path: Path, result: dict[str, Any]) -> None:
        self.path = path
        self.work = path.parent
        self.result = result
        self.record("steps", {})

    def record(self, key: str, value: object) -> None:
        """Set one figure of the result and save it."""
        self.result[key] = value
        self.path.write_text(json.dumps(self.result, indent=2))

    @contextmanager
    def step(self, name: str) -> Iterator[dict[str, Any]]:
        """Time a step done in this process; its entry (``s``, load before and after)."""
        entry: dict[str, Any] = {"load_before": _uptime()}
        self.result["steps"][name] = entry | {"status": "running"}
        self.record("steps", self.result["steps"])
        start = time.perf_counter()
        yield entry
        entry["s"] = round(time.perf_counter() - start, 2)
        entry["load_after"] = _uptime()
        self.result["steps"][name] = entry
        self.record("steps", self.result["steps"])
        print(f"{name}: {json.dumps(entry)}", flush=True)

    def run(self, name: str, args: list[str]) -> None:
        """Run a clinsearch command as a step: wall seconds, CPU seconds (user + system, all its
        processes: less sensitive to the machine's load than wall time) and peak MB of its
        process tree; its stderr goes to ``NAME.log``, each line stamped with seconds and MB."""
        with self.step(name) as entry, (self.work / f"{name}.log").open("w") as log:
            cpu_before = _children_cpu()
            child = subprocess.Popen([sys.executable, "-m", "clinsearch", *args], env=_CHILD_ENV,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            peak, main_peak = [0], 0
            start = time.perf_counter()
            reader = threading.Thread(target=_stamp, args=(child, log, start, peak), daemon=True)
            reader.start()
            samples = 0
            while child.poll() is None:
                tree, main = _tree_rss(child.pid)
                peak[0], main_peak = max(peak[0], tree), max(main_peak, main)
                samples += 1
                if samples % 50 == 0:  # every ~10 s: where memory goes between progress lines
                    log.write(f"[{time.perf_counter() - start:9.1f} s {peak[0] / 2**20:7.0f} MB]"
                              f" now: all {tree / 2**20:.0f} MB, main {main / 2**20:.0f} MB\n")
                    log.flush()
                time.sleep(0.2)
            reader.join()
            if child.returncode != 0:
                raise SystemExit(f"clinsearch {args[0]} failed: see {log.name}")
            entry["peak_mb"] = round(peak[0] / 2**20, 1)
            entry["peak_main_mb"] = round(main_peak / 2**20, 1)  # the command's own process
            entry["cpu_s"] = round(_children_cpu() - cpu_before, 1)

    def size(self, key: str, folder: Path) -> float:
        """Record and return the size of a folder in MB."""
        mb = round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20, 1)
        self.record(key, mb)
        return mb


def _children_cpu() -> float:
    """CPU seconds used by this process's finished child processes (and theirs)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _stamp(child: subprocess.Popen, log: TextIO, start: float, peak: list[int]) -> None:
    """Copy a child's stderr to ``log``, each line prefixed with elapsed seconds and the peak
    MB so far (progress bars end with a line each, so the stages of a build are timed)."""
    assert child.stderr is not None
    for line in child.stderr:
        log.write(f"[{time.perf_counter() - start:9.1f} s {peak[0] / 2**20:7.0f} MB] {line}")
        log.flush()


def _record(r: Report) -> dict:
    """A JSON Lines record of a synthetic report."""
    return {"id": r.id, "patient_id": r.patient_id, "visit_id": r.visit_id, "type": r.type,
            "date": r.date, "text": r.text}


def _has_command(name: str) -> bool:
    """Whether the clinsearch under test has the command ``name``."""
    return subprocess.run([sys.executable, "-m", "clinsearch", name, "--help"], env=_CHILD_ENV,
                          capture_output=True).returncode == 0


def _commit(src: Path) -> str:
    """The git commit of the checkout holding ``src`` (``+dirty`` when tracked files changed)."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(src), *args], capture_output=True,
                              text=True).stdout.strip()

    dirty = git("status", "--porcelain", "--untracked-files=no")
    return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")


def _tree_rss(pid: int) -> tuple[int, int]:
    """Resident bytes of a process and all its descendants, and of the process alone."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    total, own, todo = 0, 0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                    total += rss
                    own = rss if current == pid else own
        except OSError:
            pass
    return total, own


def _warm(index_dir: Path, methods: tuple[str, ...]) -> dict:
    """p50/p95 milliseconds per method (and cohort count) after one warm-up call each: over the
    first pass of the queries (each query's first run: it also reads the row groups of its hits
    for the first time) and over a second pass of the same queries (``again_``)."""
    out: dict = {}
    with Index.open(index_dir) as index:
        for method in methods:
            index.search(QUERIES[0], method=method)
            times, failed = [], []
            for query in QUERIES:
                start = time.perf_counter()
                try:
                    index.search(query, method=method, top=10)
                except Exception as exc:  # a crash is a finding of the benchmark: record it
                    failed.append(f"{query}: {type(exc).__name__}")
                    continue
                times.append((time.perf_counter() - start) * 1000)
            again = []
            for query in QUERIES if not failed else ():
                start = time.perf_counter()
                index.search(query, method=method, top=10)
                again.append((time.perf_counter() - start) * 1000)
            out[method] = (_percentiles(times)
                           | {f"again_{k}": v for k, v in _percentiles(again or [0.0]).items()}
                           | ({"failed": failed} if failed else {}))
    cohort = Cohort(index_dir)
    cohort.counts(COHORTS[0])
    times = []
    for query in COHORTS * 5:
        start = time.perf_counter()
        cohort.counts(query)
        times.append((time.perf_counter() - start) * 1000)
    out["cohort count"] = _percentiles(times)
    return out


def _percentiles(times: list[float]) -> dict:
    """p50 and p95 of a list of milliseconds."""
    ranked = sorted(times)
    return {"p50": round(statistics.median(ranked), 2),
            "p95": round(ranked[min(len(ranked) - 1, int(0.95 * len(ranked)))], 2)}


def _cold(args: list[str], env: dict[str, str] = _CHILD_ENV) -> float:
    """Median wall seconds of three fresh ``clinsearch`` processes (environment ``env``)."""
    return round(statistics.median(_timed_run(args, env)[0] for _ in range(3)), 2)


def _timed_run(args: list[str], env: dict[str, str], stderr: int | None = subprocess.DEVNULL
               ) -> tuple[float, float]:
    """Wall and CPU (user + system) seconds of one fresh ``clinsearch`` process."""
    start, cpu = time.perf_counter(), _children_cpu()
    subprocess.run([sys.executable, "-m", "clinsearch", *args], check=True, env=env,
                   stdout=subprocess.DEVNULL, stderr=stderr)
    return time.perf_counter() - start, _children_cpu() - cpu


def _uptime() -> str:
    """The machine's load averages (``uptime``)."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
