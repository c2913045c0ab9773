"""Warm latency of the web service's search and workbench endpoints, one client at a time.

Starts ``clinsearch serve --no-auth`` over ``--index`` (code from ``--src``, default this
checkout's, so two commits can be compared on one machine and index), then sends, over one
keep-alive connection, ``--rounds`` concept searches at report level (top 10, a new query each
time: TERM, "no TERM", "right TERM", ...), then ``--rounds`` rounds of a cohort restricted to an
uploaded list of half the patients, the cohort's chart counts, and a patient timeline (skipped
when the served code has no id lists). Prints p50 / p95 ms per endpoint.

    python benchmarks/performance/bench_workbench_api.py --index iu [--src OTHER/src] [--rounds 200]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path

from clinsearch import Index

TERMS = ("pneumothorax", "pleural effusion", "cardiomegaly", "pneumonia", "atelectasis",
         "consolidation", "pulmonary edema", "opacity", "nodule", "emphysema", "granuloma",
         "scoliosis", "fracture", "hernia", "infiltrate", "effusion", "airspace disease",
         "scarring", "thickening", "pacemaker", "catheter", "kyphosis", "osteopenia")
VARIANTS = ("{}", "no {}", "right {}", "left {}", "small {}", "possible {}", "mild {}", "new {}")
COHORT = 'pneumonia AND NOT "pleural effusion"'


def serve(index: Path, src: Path, folder: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A running server over ``index`` with the code in ``src``, and its port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    env = os.environ | {"PYTHONPATH": str(src)}
    process = subprocess.Popen(
        [sys.executable, "-m", "clinsearch", "serve", str(index), "--port", str(port),
         "--no-auth", "--audit-log", str(folder / "audit.jsonl")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return process, port
        except OSError:
            time.sleep(0.5)
    process.terminate()
    raise SystemExit("the server did not start within 600 s")


def call(conn: http.client.HTTPConnection, method: str, path: str, body: object = None
         ) -> tuple[int, float, dict]:
    """One request: status, milliseconds, decoded answer."""
    data = None if body is None else json.dumps(body).encode()
    start = time.perf_counter()
    conn.request(method, path, body=data, headers={"X-Purpose": "latency benchmark",
                                                   "Content-Type": "application/json"})
    answer = conn.getresponse()
    raw = answer.read()
    ms = (time.perf_counter() - start) * 1000
    return answer.status, ms, json.loads(raw) if raw[:1] in (b"{", b"[") else {}


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--src", type=Path, default=Path(__file__).resolve().parents[2] / "src")
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    with Index.open(args.index) as opened:
        patients = sorted(set(opened.generation.table("reports", ["patient_id"])
                              .column("patient_id").to_pylist()))
    queries = [v.format(t) for v in VARIANTS for t in TERMS]
    with tempfile.TemporaryDirectory() as tmp:
        process, port = serve(args.index, args.src, Path(tmp))
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
            status, _, listed = call(conn, "POST", "/api/lists", {
                "name": "half", "csv": "\n".join(patients[::2])})
            list_id = listed.get("id") if status == 200 else None
            for q in queries[:10]:  # warm-up, not counted
                call(conn, "GET", "/api/search?" + urllib.parse.urlencode({"q": q}))
            times: dict[str, list[float]] = {}
            plans = [[("search concept", "GET", "/api/search?" + urllib.parse.urlencode(
                {"q": queries[(n + 10) % len(queries)], "method": "concept", "level": "report",
                 "top": 10}), None)] for n in range(args.rounds)]
            for n in range(args.rounds if list_id is not None else 0):
                plans.append([  # the workbench's endpoints, after the searches
                    ("cohort in a list", "POST", "/api/cohort",
                     {"query": COHORT, "list_id": list_id, "limit": 20}),
                    ("charts", "POST", "/api/charts/cohort", {"query": COHORT}),
                    ("timeline", "GET", f"/api/patients/{patients[n % len(patients)]}"
                     f"/timeline?query={urllib.parse.quote(COHORT)}", None)])
            for plan in plans:
                for name, method, path, body in plan:
                    status, ms, _ = call(conn, method, path, body)
                    if status != 200:
                        raise SystemExit(f"{name}: HTTP {status}")
                    times.setdefault(name, []).append(ms)
        finally:
            process.terminate()
            process.wait(timeout=60)
    print(f"code: {args.src}; index: {args.index}; {args.rounds} rounds; load {os.getloadavg()}")
    print("| endpoint | requests | p50 ms | p95 ms |\n| --- | ---: | ---: | ---: |")
    for name, values in times.items():
        print(f"| {name} | {len(values)} | {percentile(values, 0.5):.1f} |"
              f" {percentile(values, 0.95):.1f} |")


if __name__ == "__main__":
    main()
