"""The admin audit viewer on a large log: a page found through ``AuditIndex`` (offsets and
codes, built once, then only appended records read) against the whole-log read it replaced.

Writes a keyed chain of ``--records`` records shaped as the server writes them (users,
endpoints, purposes, parameters, counts and disclosed ids; seven days) into a temporary
folder, then times: the old viewer's read of the whole log (``--whole`` times), the index's
first page (which builds it), ``--rounds`` warm pages for each filter (none, a user, an
endpoint, a purpose part, one day, a deep offset), and a page after 1,000 more records.
Prints seconds and ms (p50 / max) and the process's peak memory.

    python -m benchmarks.performance.bench_audit_viewer --records 1000000
"""

from __future__ import annotations

import argparse
import json
import resource
import secrets
import statistics
import tempfile
import time
from pathlib import Path

from clinsearch.server.audit_chain import GENESIS, keyed_line
from clinsearch.server.audit_index import AuditFilter, AuditIndex

ENDPOINTS = ("search", "cohort", "report", "patients/timeline", "charts/cohort", "saved/rerun")
PURPOSES = ("QA review", "Study 12: pneumonia cohort", "Teaching file", "Registry abstraction")


def write_log(path: Path, records: int, key: bytes, start: int = 0, prev: str = GENESIS) -> str:
    """Append ``records`` keyed records (from number ``start``) and return the last mac."""
    with path.open("ab") as out:
        for seq in range(start, start + records):
            day = 20 + seq * 7 // max(records, 1)
            record = {"seq": seq, "time": f"2026-11-{day:02d}T10:{seq % 60:02d}:00.000Z",
                      "user": f"user{seq % 40}", "role": "researcher",
                      "purpose": PURPOSES[seq % len(PURPOSES)], "client": "127.0.0.1:50000",
                      "endpoint": ENDPOINTS[seq % len(ENDPOINTS)],
                      "params": {"q": f"pleural effusion {seq % 997}", "top": 10},
                      "counts": {"total": seq % 200, "returned": 10},
                      "disclosed": {"reports": {"ids": [f"r{seq % 3955 + i}" for i in range(5)]}},
                      "generation": "g000001", "prev": prev}
            line, prev = keyed_line(key, record)
            out.write(line + b"\n")
    return prev


def timed_ms(call, rounds: int) -> tuple[float, float]:  # type: ignore[no-untyped-def]
    """p50 and max of ``rounds`` calls, in ms."""
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times), max(times)


def whole_read(path: Path, wanted: AuditFilter) -> int:
    """The viewer before the index: every record parsed and filtered on each request."""
    kept = []
    with path.open("rb") as log:
        for line in log:
            record = json.loads(line)
            if wanted.user and record.get("user") != wanted.user:
                continue
            kept.append(record)
    kept.reverse()
    return len(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--whole", type=int, default=2, help="whole-log reads timed (0: none)")
    args = parser.parse_args()
    key = secrets.token_bytes(32)
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as folder:
        path = Path(folder) / "audit.jsonl"
        began = time.perf_counter()
        prev = write_log(path, args.records, key)
        print(f"log: {args.records:,} records, {path.stat().st_size / 1e6:.0f} MB, written in"
              f" {time.perf_counter() - began:.1f} s")
        for _ in range(args.whole):
            began = time.perf_counter()
            whole_read(path, AuditFilter(user="user3"))
            print(f"whole-log read (the viewer before): {time.perf_counter() - began:.2f} s")
        index = AuditIndex(path)
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        began = time.perf_counter()
        index.page(AuditFilter(), 0, 50)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(f"first page (builds the index): {time.perf_counter() - began:.2f} s, peak RSS"
              f" {rss / 1024:.0f} -> {after / 1024:.0f} MB")
        cases = {
            "newest 50": (AuditFilter(), 0),
            "user": (AuditFilter(user="user3"), 0),
            "endpoint": (AuditFilter(endpoint="report"), 0),
            "purpose part": (AuditFilter(purpose="study"), 0),
            "one day": (AuditFilter(date_from="2026-11-23", date_to="2026-11-23"), 0),
            "offset 500,000": (AuditFilter(), 500_000),
        }
        for name, (wanted, offset) in cases.items():
            p50, worst = timed_ms(lambda w=wanted, o=offset: index.page(w, o, 50), args.rounds)
            total = index.page(wanted, offset, 50)[0]
            print(f"page ({name}, {total:,} match): p50 {p50:.1f} ms, max {worst:.1f} ms")
        write_log(path, 1000, key, args.records, prev)
        began = time.perf_counter()
        total = index.page(AuditFilter(), 0, 50)[0]
        print(f"page after 1,000 more records ({total:,}): "
              f"{(time.perf_counter() - began) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
