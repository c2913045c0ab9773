"""The audit trail's hash chain: appended records verify; any edit, removal, reordering or cut is
caught by ``clinsearch audit verify``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinsearch.errors import ClinsearchError
from clinsearch.server.audit import AuditLog, verify_audit

from .conftest import clinsearch


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    for n in range(5):
        log.write(user="u", role="researcher", purpose="p", endpoint="search",
                  params={"q": f"query {n}"}, counts={"total": n})
    log.close()
    return path


def test_records_chain_and_resume(log_path: Path) -> None:
    assert verify_audit(log_path).ok and verify_audit(log_path).records == 5
    log = AuditLog(log_path)  # a restarted server continues the chain
    log.write(user="u", role="viewer", purpose="p", endpoint="cohort", params={}, counts={})
    log.close()
    result = verify_audit(log_path)
    assert result.ok and result.records == 6
    assert json.loads(log_path.read_text().splitlines()[-1])["seq"] == 5
    assert oct(log_path.stat().st_mode & 0o777) == "0o600"
    assert clinsearch("audit", "verify", str(log_path)).returncode == 0


def _edit(lines: list[str]) -> list[str]:
    record = json.loads(lines[2])
    record["counts"]["total"] = 99
    return [*lines[:2], json.dumps(record, separators=(",", ":")), *lines[3:]]


@pytest.mark.parametrize("tamper", [
    pytest.param(_edit, id="edited"),
    pytest.param(lambda lines: lines[:1] + lines[2:], id="removed"),
    pytest.param(lambda lines: [lines[0], lines[2], lines[1], *lines[3:]], id="reordered"),
    pytest.param(lambda lines: lines[:-1], id="cut-off-the-end"),
    pytest.param(lambda lines: [*lines[:-1], lines[-1].replace('"u"', '"x"')], id="last-edited"),
])
def test_tampering_is_detected(log_path: Path, tamper) -> None:  # type: ignore[no-untyped-def]
    lines = log_path.read_text().splitlines()
    log_path.write_text("\n".join(tamper(lines)) + "\n")
    assert not verify_audit(log_path).ok
    result = clinsearch("audit", "verify", str(log_path), check=False)
    assert result.returncode == 1 and "tampered" in result.stderr
    with pytest.raises(ClinsearchError, match="fails verification"):
        AuditLog(log_path)  # a server refuses to extend a broken chain


def test_crash_between_record_and_head_is_not_tampering(log_path: Path) -> None:
    head = log_path.with_name(log_path.name + ".head")
    before = head.read_bytes()
    log = AuditLog(log_path)
    log.write(user="u", role="viewer", purpose="p", endpoint="search", params={}, counts={})
    log.close()
    head.write_bytes(before)  # the record reached the disk, its head did not
    assert verify_audit(log_path).ok
    AuditLog(log_path).close()  # a restarted server accepts the log and brings the head up
    assert head.read_text().split()[0] == "5"
    head.write_bytes(before)
    log_path.write_text("\n".join(log_path.read_text().splitlines()[:-2]) + "\n")
    assert not verify_audit(log_path).ok  # a head ahead of the log: records were cut off
