"""Item 9 for the server: a failure of the server's system (a full disk under the audit log, a
broken index) answers as the CLI does, over real HTTP: one line naming the file and the reason
(HTTP 503), no traceback, no report text, and the audit chain stays intact."""

from __future__ import annotations

import errno
import json
from pathlib import Path

from ..server.conftest import Server, serving
from .hostile import REPORTS, run

AUDIT_PAGE_RECORDS = 12  # audit records of a search that fill a 4 kB page and more


def _search(server: Server) -> tuple[int, dict]:
    answer = server.call("GET", "/api/search", role=None, params={"q": "pneumonia"})
    return answer.status, json.loads(answer.text)


def _fill(disk: Path) -> Path:
    """Fill ``disk`` until the OS says it is full."""
    filler = disk / "filler"
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    return filler


def _clean(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text
        assert all(report not in text for *_, report in REPORTS)


def test_a_full_disk_under_the_audit_log(index_dir: Path, tiny_disk: Path, tmp_path: Path) -> None:
    audit, log = tiny_disk / "audit.jsonl", tmp_path / "server.log"
    with serving(index_dir, audit, log) as server:
        status, body = _search(server)
        assert status == 200 and body["hits"]
        filler = _fill(tiny_disk)
        refusals = [_search(server) for _ in range(AUDIT_PAGE_RECORDS)]
        assert all(status == 503 and "\n" not in failed["detail"] for status, failed in refusals)
        # each refused, the audit log's own refusal once its last page fills (the heads are
        # rewritten in place: they need no new space); the others name the workbench's file
        assert {"detail": "audit.jsonl: no space left on device"} in [f for _, f in refusals]
        assert {f["detail"] for _, f in refusals} <= {
            "audit.jsonl: no space left on device", "SQLite database: database or disk is full"}
        filler.unlink()
        status, body = _search(server)
        assert status == 200 and body["hits"]
    _clean(log.read_text())
    assert f"cannot serve /api/search: {audit}: no space left on device" in log.read_text()
    code, _, err = run("audit", "verify", audit)
    assert code == 0, err


def test_a_broken_index_while_serving(index_dir: Path, tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with serving(index_dir, tmp_path / "audit.jsonl", log) as server:
        generation = index_dir / (index_dir / "CURRENT").read_text().strip()
        (generation / "segments" / "s000001" / "reports.parquet").unlink()
        answer = server.call("GET", "/api/reports/r3", role=None)
        assert answer.status == 503, answer.text
        detail = answer.json()["detail"]
        assert "no such file or directory" in detail and "\n" not in detail
        headers = {k.lower(): v for k, v in answer.headers.items()}  # a failure's answer too
        assert headers["cache-control"] == "no-store"
        assert headers["content-security-policy"].startswith("default-src 'self'")
        assert server.call("GET", "/api/session", role=None).status == 200
    _clean(log.read_text(), answer.text)


def test_refused_records_are_not_half_counted_and_restart_works(
        index_dir: Path, tiny_disk: Path, tmp_path: Path) -> None:
    """Issue 27, item 4: requests refused while the disk is full leave neither records nor a
    head out of step, so verification passes and a restart after space returns works."""
    audit = tiny_disk / "audit.jsonl"
    with serving(index_dir, audit, tmp_path / "server.log") as server:
        assert _search(server)[0] == 200
        filler = _fill(tiny_disk)
        for _ in range(3):
            assert _search(server)[0] == 503
        code, _, err = run("audit", "verify", audit)
        assert code == 0, err  # while the disk is still full
    filler.unlink()
    with serving(index_dir, audit, tmp_path / "again.log") as server:
        status, body = _search(server)
        assert status == 200 and body["hits"]
    code, _, err = run("audit", "verify", audit)
    assert code == 0, err
    assert not list(tiny_disk.glob(".*.tmp"))
