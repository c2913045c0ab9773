"""Benchmark the storage engine at scale on a seeded synthetic corpus (issue 16).

Run: ``python benchmarks/bench_storage.py --reports 100000 [--workers N] [--work DIR]``

The corpus recombines sentences of IU X-ray (when ../shared data is present, else the bundled
sample), about half of them with a distinct ending (``clinsearch.corpus.synthetic``). Measured:
``clinsearch index`` time and peak memory (the whole process tree, sampled from /proc), index
size, ``add`` of 1,000 reports and ``delete`` of 1,000, warm query p50/p95 per method (in one
process), cohort count time, and cold CLI search/cohort (a fresh process each). Prints one JSON
object (and writes it beside the index); the machine's load (``uptime``) is recorded before and
after, since the machine may be shared.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

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
    parser.add_argument("--work", type=Path, default=None, help="folder for corpus and index")
    parser.add_argument("--build-only", action="store_true", help="measure only the build")
    parser.add_argument(
        "--child-src", type=Path, default=None,
        help="run the clinsearch commands from this src folder (e.g. an older checkout's; with"
        " --workers 0 no --workers option is passed)")
    args = parser.parse_args()
    if args.child_src is not None:
        _CHILD_ENV["PYTHONPATH"] = str(args.child_src.resolve())
    work = args.work or Path(tempfile.mkdtemp(prefix="bench-storage-"))
    work.mkdir(parents=True, exist_ok=True)
    source, fmt = default_source()
    pool = sentence_pool(read_reports(source, fmt, skip_bad=True))
    corpus, extra = work / "corpus.jsonl", work / "extra.jsonl"
    write_json_lines(corpus, (_record(r) for r in synthetic_reports(pool, args.reports, args.seed)))
    write_json_lines(extra, (_record(r) for r in synthetic_reports(pool, 1000, args.seed,
                                                               start=args.reports)))
    index = work / "index"
    shutil.rmtree(index, ignore_errors=True)
    result: dict = {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.node()} ({available_cores()} cores, {platform.machine()})",
        "load_before": _uptime(),
        "reports": args.reports,
        "workers": args.workers,
        "source": fmt,
        "command": " ".join(sys.argv),
    }
    workers = ["--workers", str(args.workers)] if args.workers else []
    result["clinsearch_src"] = str(args.child_src or "this checkout")
    result["build_s"], result["build_peak_mb"] = _run(
        ["index", str(corpus), "--format", "jsonl", "-o", str(index), *workers])
    result["index_mb"] = round(_size(index) / 2**20, 1)
    if args.build_only:
        result["load_after"] = _uptime()
        print(json.dumps(result, indent=2))
        return
    result["add_1000_s"], result["add_peak_mb"] = _run(
        ["add", str(index), str(extra), "--format", "jsonl", "--workers", str(args.workers)])
    ids = work / "delete.txt"
    ids.write_text("\n".join(f"syn-{i}" for i in range(0, args.reports, args.reports // 1000)))
    result["delete_1000_s"], _ = _run(["delete", str(index), "--ids-file", str(ids)])
    result["index_mb_after_changes"] = round(_size(index) / 2**20, 1)
    check_s, _ = _run(["check", str(index)])
    result["check_s"] = check_s
    result["warm_ms"] = _warm(index)
    result["cold_s"] = {
        "search bm25": _cold(["search", str(index), "pleural effusion", "--format", "trec"]),
        "search concept": _cold(["search", str(index), "pleural effusion", "--method",
                                 "concept", "--format", "trec"]),
        "cohort": _cold(["cohort", str(index), "pneumothorax", "--json"]),
    }
    result["load_after"] = _uptime()
    (work / "bench_storage.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


def _record(r: Report) -> dict:
    """A JSON Lines record of a synthetic report."""
    return {"id": r.id, "patient_id": r.patient_id, "visit_id": r.visit_id, "type": r.type,
            "date": r.date, "text": r.text}


def _run(args: list[str]) -> tuple[float, float]:
    """Run a clinsearch command; (wall seconds, peak MB of its whole process tree)."""
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "clinsearch", *args], env=_CHILD_ENV,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    peak = 0
    while child.poll() is None:
        peak = max(peak, _tree_rss(child.pid))
        time.sleep(0.2)
    elapsed = time.perf_counter() - start
    if child.returncode != 0:
        raise SystemExit(f"clinsearch {args[0]} failed: {child.stderr.read()[-2000:]}")
    return round(elapsed, 2), round(peak / 2**20, 1)


def _tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def _warm(index_dir: Path) -> dict:
    """p50/p95 milliseconds per method (and cohort count) after one warm-up call each."""
    out: dict = {}
    with Index.open(index_dir) as index:
        for method in METHODS:
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
            out[method] = _percentiles(times) | ({"failed": failed} if failed else {})
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


def _cold(args: list[str]) -> float:
    """Median wall seconds of three fresh ``clinsearch`` processes."""
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "clinsearch", *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times), 2)


def _size(folder: Path) -> int:
    """Bytes of all files under a folder."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _uptime() -> str:
    """The machine's load averages (``uptime``)."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
