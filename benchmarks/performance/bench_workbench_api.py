"""Warm latency of the web service's search and workbench endpoints, one client at a time.

Starts ``clinsearch serve --no-auth`` over ``--index`` once per ``--src`` (the code served;
default this checkout's): two commits are compared on one machine and index, each request sent
to every server in turn (alternating which goes first), so both see the same load. Sends, over
one keep-alive connection per server, ``--rounds`` concept searches at report level (top 10, a
new query each time: TERM, "no TERM", "right TERM", ...), then ``--rounds`` rounds of a cohort
restricted to an uploaded list of half the patients, the cohort's chart counts, and a patient
timeline (skipped when the served code has no id lists). ``--exact``: the searches ask for the
exact asserting counts, as the page does. Prints p50 / p95 ms per endpoint.

    python -m benchmarks.performance.bench_workbench_api --index iu [--src BASE/src --src src]
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
    headers = {"X-Purpose": "latency benchmark", "Content-Type": "application/json"}
    start = time.perf_counter()
    try:
        conn.request(method, path, body=data, headers=headers)
        answer = conn.getresponse()
    except (http.client.RemoteDisconnected, ConnectionResetError):
        # the server closed an idle keep-alive connection: reconnect, time from there
        conn.close()
        start = time.perf_counter()
        conn.request(method, path, body=data, headers=headers)
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
    parser.add_argument("--src", type=Path, action="append",
                        help="code to serve (repeat to compare; default: this checkout's)")
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--exact", action="store_true",
                        help="searches ask for the exact asserting counts, as the page does")
    args = parser.parse_args()
    sources = args.src or [Path(__file__).resolve().parents[2] / "src"]
    with Index.open(args.index) as opened:
        patients = sorted(set(opened.generation.table("reports", ["patient_id"])
                              .column("patient_id").to_pylist()))
    queries = [v.format(t) for v in VARIANTS for t in TERMS]
    times: dict[tuple[int, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        servers = [serve(args.index, src, Path(tmp) / str(n)) for n, src in enumerate(sources)]
        try:
            conns, list_ids = [], []
            for _, port in servers:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
                status, _, listed = call(conn, "POST", "/api/lists", {
                    "name": "half", "csv": "\n".join(patients[::2])})
                list_ids.append(listed.get("id") if status == 200 else None)
                for q in queries[:10]:  # warm-up, not counted
                    call(conn, "GET", "/api/search?" + urllib.parse.urlencode({"q": q}))
                conns.append(conn)
            for n in range(2 * args.rounds):  # each request to every server in turn
                order = range(len(servers)) if n % 2 else reversed(range(len(servers)))
                for s in order:
                    for name, method, path, body in plan(n, queries, patients, list_ids[s],
                                                         args.rounds, args.exact):
                        status, ms, _ = call(conns[s], method, path, body)
                        if status != 200:
                            raise SystemExit(f"{sources[s]}: {name}: HTTP {status}")
                        times.setdefault((s, name), []).append(ms)
        finally:
            for process, _ in servers:
                process.terminate()
                process.wait(timeout=60)
    print(f"index: {args.index}; {args.rounds} rounds; load at the end {os.getloadavg()}")
    print("| code | endpoint | requests | p50 ms | p95 ms |\n| --- | --- | ---: | ---: | ---: |")
    for (s, name), values in times.items():
        print(f"| {sources[s]} | {name} | {len(values)} | {percentile(values, 0.5):.1f} |"
              f" {percentile(values, 0.95):.1f} |")


def plan(n: int, queries: list[str], patients: list[str], list_id: int | None, rounds: int,
         exact: bool) -> list[tuple[str, str, str, object]]:
    """Request ``n``: a concept search in the first ``rounds`` (asking for the exact counts
    with ``exact``; code without them ignores it), then the workbench's endpoints (none when
    the served code has no id lists)."""
    if n < rounds:
        params = {"q": queries[(n + 10) % len(queries)], "method": "concept",
                  "level": "report", "top": 10} | ({"exact": "true"} if exact else {})
        name = "search concept" + (", exact" if exact else "")
        return [(name, "GET", "/api/search?" + urllib.parse.urlencode(params), None)]
    if list_id is None:
        return []
    return [("cohort in a list", "POST", "/api/cohort",
             {"query": COHORT, "list_id": list_id, "limit": 20}),
            ("charts", "POST", "/api/charts/cohort", {"query": COHORT}),
            ("timeline", "GET", f"/api/patients/{patients[n % len(patients)]}"
             f"/timeline?query={urllib.parse.quote(COHORT)}", None)]


if __name__ == "__main__":
    main()
