"""Benchmark the Spark engine against a local build on a seeded synthetic corpus.

Run: ``python -m benchmarks.performance.bench_spark --reports 2000`` (from the repository root, with
``PYTHONPATH=src``). The corpus recombines the sentences of the bundled sample (and of IU X-ray
findings/impressions when ../shared/data has them) into N reports of 1-4 visits per patient,
seeded. Each engine runs in its own child process while this one samples /proc every 0.2 s:
peak resident memory of the driver (Python), of the JVM (driver and, in local mode, executors)
and of the Python workers (executors' annotators), summed per kind. The Spark child then
computes the parts a second time on its warm workers: the steady-state executor rate of a long
job. Reports, sentences and findings rows, BM25 top 10 and cohort counts of both indexes are
compared.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SEARCHES = ["pleural effusion", "no pneumothorax", "right lower lobe pneumonia", "cardiomegaly"]
COHORTS = ["pneumonia", 'pneumonia AND NOT "pleural effusion"', "NOT cardiomegaly",
           "(atelectasis AND edema) same report", "no pneumothorax section:impression"]


def make_corpus(n: int, seed: int, folder: Path) -> Path:
    """N synthetic reports as JSON Lines, sentences drawn from real and sample reports."""
    from clinsearch.corpus.readers import read_reports
    from clinsearch.corpus.sample import sample_reports_path
    from clinsearch.corpus.segment import Segmenter
    from clinsearch.datasets import IU_XRAY, shared_data

    reports = list(read_reports(sample_reports_path(), "jsonl"))
    if (iu := shared_data(IU_XRAY)) is not None:
        reports += list(read_reports(iu, "iu-xray", skip_bad=True))
    by_section: dict[str, list[str]] = {"findings": [], "impression": []}
    for seg in Segmenter().segment_many(reports):
        for s in seg.sentences:
            if s.section in by_section:
                by_section[s.section].append(s.text)
    rng = random.Random(seed)
    path = folder / "corpus.jsonl"
    with path.open("w", encoding="utf-8") as out:
        patient, visit, written = 0, 0, 0
        while written < n:
            patient += 1
            for _ in range(rng.randint(1, 4)):
                visit += 1
                if written == n:
                    break
                findings = " ".join(rng.sample(by_section["findings"], rng.randint(2, 6)))
                impression = " ".join(rng.sample(by_section["impression"], rng.randint(1, 2)))
                record = {
                    "id": f"R{written:07d}", "patient_id": f"P{patient:06d}",
                    "visit_id": f"V{visit:07d}", "type": rng.choice(["CXR PA/lateral", "CXR AP"]),
                    "date": f"20{rng.randint(15, 24)}-{rng.randint(1, 12):02d}-"
                            f"{rng.randint(1, 28):02d}",
                    "text": f"FINDINGS: {findings}\nIMPRESSION: {impression}",
                }
                out.write(json.dumps(record) + "\n")
                written += 1
    return path


def child(engine: str, corpus: Path, out: Path, partitions: int, warm: bool) -> None:
    """Build one index and print its timings as JSON (run in a child process)."""
    from clinsearch import Index

    started = time.perf_counter()
    if engine == "local":
        from clinsearch.corpus.readers import read_reports

        Index.build(read_reports(corpus, "jsonl"), out, progress=False)
        print(json.dumps({"total_s": time.perf_counter() - started}))
        return
    from clinsearch.index import IndexConfig
    from clinsearch.spark import spark_session
    from clinsearch.spark.build import computed_parts

    spark = spark_session(f"local[{partitions}]")
    ready = time.perf_counter()
    with computed_parts(spark, corpus, "jsonl", IndexConfig(), partitions, None, False, None,
                        {}) as parts:
        computed = time.perf_counter()
        Index.build_from_parts(parts, out, IndexConfig(), progress=False)
    done = time.perf_counter()
    timings = {"total_s": done - started, "session_s": ready - started,
               "executors_s": computed - ready, "commit_s": done - computed}
    if warm:
        with computed_parts(spark, corpus, "jsonl", IndexConfig(), partitions, None, False,
                            None, {}):  # again, on warm workers: the steady-state rate
            timings["executors_warm_s"] = time.perf_counter() - done
    print(json.dumps(timings))


def _tree_rss(root: int) -> dict[str, int]:
    """Resident memory (bytes) of ``root`` and its descendants, by kind."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    totals = {"driver": 0, "jvm": 0, "workers": 0}
    stack = [root]
    while stack:
        pid = stack.pop()
        stack += children.get(pid, [])
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
        except OSError:
            continue
        rss = next((int(line.split()[1]) * 1024 for line in status.splitlines()
                    if line.startswith("VmRSS:")), 0)
        kind = ("jvm" if "java" in cmd.split(" ")[0] else
                "workers" if "pyspark" in cmd and pid != root else "driver")
        totals[kind] += rss
    return totals


def measure(engine: str, corpus: Path, out: Path, partitions: int,
            warm: bool) -> dict[str, float]:
    """Run ``child`` for ``engine`` and sample its process tree's memory."""
    cmd = [sys.executable, __file__, "--child", engine, "--corpus", str(corpus), "--out",
           str(out), "--partitions", str(partitions), *([] if warm else ["--no-warm"])]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    peaks = {"driver": 0, "jvm": 0, "workers": 0}

    def sample() -> None:
        while proc.poll() is None:
            for kind, rss in _tree_rss(proc.pid).items():
                peaks[kind] = max(peaks[kind], rss)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample)
    sampler.start()
    stdout, _ = proc.communicate()
    sampler.join()
    if proc.returncode:
        raise SystemExit(f"{engine} build failed ({proc.returncode})")
    result = json.loads(stdout.strip().splitlines()[-1])
    return result | {f"peak_{k}_mb": v / 2**20 for k, v in peaks.items()}


def compare(local: Path, spark: Path) -> dict[str, bool]:
    """Equality of tables, BM25 top 10 and cohort counts between the two indexes."""
    from clinsearch import Index
    from clinsearch.search.cohort import Cohort

    a, b = Index.open(local), Index.open(spark)
    same = {name: a.generation.table(name).equals(b.generation.table(name))
            for name in ("reports", "sentences", "findings")}
    same["bm25_top10"] = all(
        [(h.id, h.score) for h in a.search(q, top=10)] == [(h.id, h.score)
                                                           for h in b.search(q, top=10)]
        for q in SEARCHES)
    ca, cb = Cohort(local), Cohort(spark)
    same["cohort_counts"] = all(ca.counts(q) == cb.counts(q) for q in COHORTS)
    return same


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reports", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=18)
    parser.add_argument("--partitions", type=int, default=2, help="local[N] and tasks")
    parser.add_argument("--no-warm", dest="warm", action="store_false",
                        help="skip the second (warm workers) Spark pass")
    parser.add_argument("--child", choices=("local", "spark"), help=argparse.SUPPRESS)
    parser.add_argument("--corpus", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.corpus, args.out, args.partitions, args.warm)
        return 0
    print(f"load before: {os.getloadavg()} on {os.cpu_count()} cores")
    with tempfile.TemporaryDirectory(prefix="bench-spark-") as tmp:
        root = Path(tmp)
        corpus = make_corpus(args.reports, args.seed, root)
        results = {engine: measure(engine, corpus, root / engine, args.partitions, args.warm)
                   for engine in ("local", "spark")}
        from clinsearch import Index

        counts = Index.open(root / "local").manifest.counts
        results["same"] = compare(root / "local", root / "spark")
    print(f"load after: {os.getloadavg()}")
    cores = {"local": 1, "spark": args.partitions}
    for engine in ("local", "spark"):
        r = results[engine]
        r["reports_per_s"] = args.reports / r["total_s"]
        r["reports_per_s_per_core"] = args.reports / r["total_s"] / cores[engine]
        if "executors_warm_s" in r:
            r["warm_executor_reports_per_s_per_core"] = (
                args.reports / r["executors_warm_s"] / cores[engine])
            r["commit_reports_per_s"] = args.reports / r["commit_s"]
    results["corpus"] = {"reports": counts.reports, "sentences": counts.sentences}
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
