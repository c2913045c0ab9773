"""Load benchmark of ``clinsearch serve`` on the IU X-ray index, with index changes mid-run.

Starts the real server (uvicorn on 127.0.0.1, tokens on) over a copy of ``--index`` (built with
``--dense``), then sends ``--requests`` mixed requests from ``--clients`` concurrent clients
(keep-alive HTTP): searches by bm25, concept, dense and hybrid at report level, cohort counts
and report views. Searches cycle through 600 distinct queries per method, so the server's result
cache answers almost none. After a tenth of the requests ``clinsearch add`` adds 100 reports (IU
texts under new ids), then ``clinsearch delete`` removes 50 of them; the load goes on until at
least ``--requests`` were sent and the last generation has answered for 5 s. Prints p50/p95
latency per endpoint, errors (any non-200 answer or connection failure), the generations that
answered, how long each switch took, and the server's start: to its first answer, and to warm
models (the dense encoder loads in the background; the load starts once it has).

    python -m benchmarks.performance.bench_serve --index iu-dense [--requests 2000 --clients 8]
    python -m benchmarks.performance.bench_serve --index iu-dense --requests 300 --clients 1 \
        --no-changes
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

from clinsearch import Index
from clinsearch.index.generations import current_generation

TERMS = (
    "pneumothorax", "pleural effusion", "cardiomegaly", "pneumonia", "atelectasis", "consolidation",
    "pulmonary edema", "opacity", "nodule", "emphysema", "granuloma", "scoliosis", "fracture",
    "hernia", "infiltrate", "calcified granuloma", "tortuous aorta", "hyperinflation",
    "interstitial markings", "osteophytes", "degenerative changes", "effusion", "mass",
    "pulmonary fibrosis", "airspace disease", "enlarged heart", "low lung volumes", "scarring",
    "thickening", "calcinosis", "pacemaker", "sternotomy wires", "chest tube", "catheter",
    "hilar adenopathy", "vascular congestion", "kyphosis", "osteopenia", "aortic ectasia",
    "bronchiectasis", "cyst", "lesion", "collapse", "blunting of the costophrenic angle",
    "lobar pneumonia", "lymphadenopathy", "density", "cavitation", "subcutaneous emphysema",
    "pneumoperitoneum", "rib fracture", "hyperexpansion", "cardiac enlargement",
    "mediastinal widening", "pulmonary nodules", "interstitial edema", "pleural thickening",
    "bibasilar atelectasis", "spondylosis", "COPD",
)
VARIANTS = ("{}", "no {}", "right {}", "left {}", "small {}", "possible {}", "large {}", "mild {}",
            "new {}", "bilateral {}")
COHORTS = (
    "pneumonia AND NOT \"pleural effusion\"", "cardiomegaly AND pleural effusion",
    "no pneumothorax", "(atelectasis AND opacity) same sentence", "emphysema OR hyperinflation",
    "granuloma AND NOT nodule", "pulmonary edema AND cardiomegaly", "scoliosis",
    "no pneumothorax AND section:impression", "consolidation OR pneumonia",
)
SEARCH_METHODS = ("bm25", "concept", "dense", "hybrid")
# one round of the mix: each method searched twice, two cohorts, two report views
MIX = ("concept", "hybrid", "bm25", "dense", "cohort", "report", "concept", "hybrid", "bm25",
       "dense", "cohort", "report")


@dataclass
class Tally:
    """Latencies (ms) per endpoint, errors, and which generation answered when."""

    latencies: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    generations: list[tuple[float, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, endpoint: str, ms: float, generation: str | None, error: str | None) -> None:
        with self.lock:
            self.latencies.setdefault(endpoint, []).append(ms)
            if error:
                self.errors.append(f"{endpoint}: {error}")
            if generation:
                self.generations.append((time.time(), generation))


def requests_plan(total: int, report_ids: list[str]) -> list[tuple[str, str, str, bytes | None]]:
    """(endpoint, method, path, body) for each request, in a fixed shuffled order."""
    rng = random.Random(17)
    queries = {m: [v.format(t) for t in TERMS for v in VARIANTS] for m in SEARCH_METHODS}
    for m in SEARCH_METHODS:
        rng.shuffle(queries[m])
    cursor = dict.fromkeys(SEARCH_METHODS, 0)
    plan = []
    for kind in itertools.islice(itertools.cycle(MIX), total):
        if kind in SEARCH_METHODS:
            q = queries[kind][cursor[kind] % len(queries[kind])]
            cursor[kind] += 1
            params = urllib.parse.urlencode({"q": q, "method": kind, "level": "report", "top": 10})
            plan.append((f"search {kind}", "GET", f"/api/search?{params}", None))
        elif kind == "cohort":
            body = json.dumps({"query": rng.choice(COHORTS), "level": "patient", "limit": 20})
            plan.append(("cohort", "POST", "/api/cohort", body.encode()))
        else:
            plan.append(("report", "GET", f"/api/reports/{rng.choice(report_ids)}", None))
    return plan


class Counter:
    """A thread-safe count of answered requests."""

    def __init__(self) -> None:
        self.value = 0
        self._lock = threading.Lock()

    def increment(self) -> None:
        with self._lock:
            self.value += 1


class Jobs:
    """The requests to send, shared by the clients: the plan, repeated until at least
    ``minimum`` were sent and the index changes are done (or the time limit is reached)."""

    def __init__(self, plan: list, minimum: int, changes_done: threading.Event,
                 deadline: float) -> None:
        self._plan, self._minimum, self._changes_done = plan, minimum, changes_done
        self._deadline, self._sent, self._lock = deadline, 0, threading.Lock()

    def __iter__(self) -> Jobs:
        return self

    def __next__(self) -> tuple[str, str, str, bytes | None]:
        with self._lock:
            enough = self._sent >= self._minimum and self._changes_done.is_set()
            if enough or time.monotonic() > self._deadline:
                raise StopIteration
            job = self._plan[self._sent % len(self._plan)]
            self._sent += 1
            return job


def client(port: int, token: str, jobs: Jobs, tally: Tally, done: Counter) -> None:
    """Send jobs over one keep-alive connection, recording each answer."""
    headers = {"Authorization": f"Bearer {token}", "X-Purpose": "load benchmark",
               "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for endpoint, method, path, body in jobs:
        start = time.perf_counter()
        generation = error = None
        try:
            conn.request(method, path, body=body, headers=headers)
            answer = conn.getresponse()
            data = answer.read()
            if answer.status != 200:
                error = f"HTTP {answer.status}: {data[:200]!r}"
            else:
                generation = json.loads(data).get("generation")
        except (OSError, http.client.HTTPException) as exc:
            error = f"{type(exc).__name__}: {exc}"
            conn.close()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        tally.record(endpoint, (time.perf_counter() - start) * 1000, generation, error)
        done.increment()
    conn.close()


def _column(index: Path, name: str) -> list[str]:
    """One column of the index's live reports table."""
    with Index.open(index) as opened:
        return opened.generation.table("reports", [name]).column(name).to_pylist()


def change_index(index: Path, workdir: Path, done: Counter, total: int, tally: Tally,
                 log: list[str], commits: list[tuple[str, float, str]],
                 finished: threading.Event) -> None:
    """Add 100 reports after a tenth of the requests, then delete 50 of them."""
    texts = _column(index, "text")[:100]
    new = workdir / "added.jsonl"
    with new.open("w", encoding="utf-8") as out:
        for n, text in enumerate(texts):
            out.write(json.dumps({"id": f"bench-{n}", "patient_id": f"bench-p{n}",
                                  "text": text}) + "\n")
    ids = workdir / "deleted.txt"
    ids.write_text("".join(f"bench-{n}\n" for n in range(50)))
    steps = ((total // 10, "add", ["add", str(index), str(new), "--format", "jsonl"]),
             (0, "delete", ["delete", str(index), "--ids-file", str(ids)]))
    for threshold, name, argv in steps:
        while done.value < threshold:
            time.sleep(0.05)
        start = time.monotonic()
        result = subprocess.run([sys.executable, "-m", "clinsearch", *argv], capture_output=True,
                                text=True)
        took = time.monotonic() - start
        if result.returncode:
            raise SystemExit(f"clinsearch {name} failed: {result.stderr}")
        # the commit is the moment CURRENT was replaced
        commits.append((name, (index / "CURRENT").stat().st_mtime, current_generation(index).name))
        log.append(f"{name}: {took:.1f} s ({result.stdout.strip()})")
    # keep the load on until the last generation has answered for a while
    while not any(g == commits[-1][2] for _, g in list(tally.generations)):
        time.sleep(0.1)
    time.sleep(5)
    finished.set()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True,
                        help="IU X-ray index built with --dense (copied; never changed)")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--no-changes", action="store_true",
                        help="no add/delete during the run (warm latency alone)")
    parser.add_argument("--record", action="store_true",
                        help="record the figures in benchmarks/figures.yaml (one client without"
                        " changes: p50 per method and the start; 8 clients with changes:"
                        " throughput, when there were no errors and the chain verifies)")
    parser.add_argument("--time-limit", type=float, default=600.0,
                        help="seconds after which no request is sent (counted as errors)")
    args = parser.parse_args()
    from clinsearch.server.auth import UserStore

    with tempfile.TemporaryDirectory(prefix="bench-serve-") as tmp:
        work = Path(tmp)
        index = work / "index"
        shutil.copytree(args.index, index, ignore=shutil.ignore_patterns(".lock"))
        token = UserStore(work / "users.json").add("bench", "researcher")
        report_ids = _column(index, "id")
        plan = requests_plan(2 * args.requests, report_ids)
        port = free_port()
        log_path = work / "server.log"
        started = time.monotonic()
        with log_path.open("w") as log_file:
            server = subprocess.Popen(
                [sys.executable, "-m", "clinsearch", "serve", str(index), "--port", str(port),
                 "--users", str(work / "users.json"), "--audit-log", str(work / "audit.jsonl"),
                 "--audit-key", str(work / "state" / "audit.key")],
                stdout=log_file, stderr=subprocess.STDOUT, env=os.environ | {"COLUMNS": "200"})
        try:
            _wait_ready(port, server, log_path)
            first_s = time.monotonic() - started
            _wait_warm(port, token, server, log_path)
            start_s = (first_s, time.monotonic() - started)
            tally, done, changes, commits = Tally(), Counter(), [], []
            deadline = time.monotonic() + args.time_limit
            finished = threading.Event()
            jobs = Jobs(plan, args.requests, finished, deadline)
            changer = threading.Thread(
                target=change_index,
                args=(index, work, done, args.requests, tally, changes, commits, finished),
                daemon=True)
            clients = [threading.Thread(target=client, args=(port, token, jobs, tally, done))
                       for _ in range(args.clients)]
            t0 = time.monotonic()
            if args.no_changes:
                finished.set()
            else:
                changer.start()
            for c in clients:
                c.start()
            for c in clients:
                c.join()
            wall = time.monotonic() - t0
            if changer.is_alive():
                changer.join(timeout=1)
            audit_lines = (work / "audit.jsonl").read_text().count("\n")
        finally:
            server.terminate()
            server.wait(timeout=30)
        _print(args, start_s, wall, tally, changes, commits, audit_lines)
        verified = subprocess.run(
            [sys.executable, "-m", "clinsearch", "audit", "verify", str(work / "audit.jsonl"),
             "--audit-key", str(work / "state" / "audit.key")], capture_output=True, text=True)
        print(f"audit verify: exit {verified.returncode}: {verified.stdout.strip()}"
              f"{verified.stderr.strip()}")
        if args.record:
            _record(args, start_s, wall, tally, verified.returncode == 0)


def _record(args: argparse.Namespace, start_s: tuple[float, float], wall: float, tally: Tally,
            verified: bool) -> None:
    """This run's figures in benchmarks/figures.yaml (see ``--record``)."""
    from benchmarks.figures import record

    command = ("python -m benchmarks.performance.bench_serve --index IDX"
               f" --requests {args.requests} --clients {args.clients}"
               + (" --no-changes" if args.no_changes else "") + " --record")
    if args.no_changes and args.clients == 1:
        for method in ("bm25", "concept", "hybrid"):
            values = tally.latencies.get(f"search {method}")
            if values:
                record(f"serve.p50.{method}", round(statistics.median(values), 1),
                       command=command)
        corpus = "IU X-ray with vectors, 3,826 reports"
        record("serve.start", round(start_s[0], 1), command=command, group="service",
               figure="server start to first answer", corpus=corpus)
        record("serve.warm", round(start_s[1], 1), command=command, group="service",
               figure="server start to warm models (dense encoder loaded)", corpus=corpus)
    elif not args.no_changes and args.clients == 8 and not tally.errors and verified:
        total = sum(len(v) for v in tally.latencies.values())
        record("serve.throughput.8", round(total / wall, 1), command=command)


def _wait_warm(port: int, token: str, server: subprocess.Popen, log_path: Path) -> None:
    """Until the server says its background warm-up (the dense encoder) has ended."""
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"server exited:\n{log_path.read_text()[-3000:]}")
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        conn.request("GET", "/api/info", headers={"Authorization": f"Bearer {token}",
                                                  "X-Purpose": "load benchmark"})
        answer = conn.getresponse()
        if answer.status == 200 and not json.loads(answer.read())["warming"]:
            return
        time.sleep(0.1)
    raise SystemExit("server did not warm its models in 300 s")


def _wait_ready(port: int, server: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"server exited:\n{log_path.read_text()[-3000:]}")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
            conn.request("GET", "/api/session")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("server did not start in 300 s")


def _print(args: argparse.Namespace, start_s: tuple[float, float], wall: float, tally: Tally,
           changes: list[str], commits: list[tuple[str, float, str]], audit_lines: int) -> None:
    total = sum(len(v) for v in tally.latencies.values())
    print(f"requests: {total} from {args.clients} clients in {wall:.1f} s"
          f" ({total / wall:.1f} requests/s); errors: {len(tally.errors)}")
    print(f"server start to first answer: {start_s[0]:.1f} s; to warm models (the dense"
          f" encoder loaded in the background): {start_s[1]:.1f} s")
    print("| endpoint | requests | p50 ms | p95 ms | max ms |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for endpoint in sorted(tally.latencies):
        values = tally.latencies[endpoint]
        print(f"| {endpoint} | {len(values)} | {statistics.median(values):.1f} |"
              f" {percentile(values, 0.95):.1f} | {max(values):.1f} |")
    for line in changes:
        print(line)
    for name, committed, generation in commits:
        served = [t for t, g in tally.generations if g == generation]
        lag = f"{min(served) - committed:.2f} s after the commit" if served else "never"
        print(f"after {name}: {generation} first answered {lag}")
    first_seen = list(dict.fromkeys(g for _, g in sorted(tally.generations)))
    print(f"generations that answered, in order of first answer: {' -> '.join(first_seen)}")
    print(f"audit records written: {audit_lines}")
    for error in tally.errors[:10]:
        print(f"error: {error}")


if __name__ == "__main__":
    main()
