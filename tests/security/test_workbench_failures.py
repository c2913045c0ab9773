"""Issue 42, item 10: the workbench's SQLite file on a full disk, after the request's audit
record was written, answers 503 with one line (as the CLI names a failure of the system), not
500, and the audit chain stays intact."""

from __future__ import annotations

from pathlib import Path

from ..server.conftest import serving
from .hostile import run
from .test_server_failures import _clean, _fill


def test_a_full_disk_under_the_workbench(index_dir: Path, tiny_disk: Path,
                                         tmp_path: Path) -> None:
    audit, log = tmp_path / "audit.jsonl", tmp_path / "server.log"
    with serving(index_dir, audit, log, options=("--workbench", str(tiny_disk / "wb.sqlite"))
                 ) as server:
        filler = _fill(tiny_disk)
        records = len(audit.read_text().splitlines())
        answer = server.call("POST", "/api/saved", role=None, body={
            "name": "full", "kind": "cohort", "state": {"query": "pneumonia"}})
        assert answer.status == 503, answer.text
        assert answer.json()["detail"] == "SQLite database: database or disk is full"
        assert len(audit.read_text().splitlines()) == records + 1  # the access is recorded
        filler.unlink()
        again = server.call("POST", "/api/saved", role=None, body={
            "name": "room", "kind": "cohort", "state": {"query": "pneumonia"}})
        assert again.status == 200, again.text
    _clean(log.read_text(), answer.text)
    code, _, err = run("audit", "verify", audit)
    assert code == 0, err
