"""The admin viewer's index of the audit log (issue 42 item 9, issue 39 item 5): pages found by
offsets and codes equal what a read of the whole log finds, for every filter, and follow
records appended, a log replaced and a record still being written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinsearch.errors import InputError
from clinsearch.server.audit import AuditLog
from clinsearch.server.audit_index import AuditFilter, AuditIndex


def _whole_log(path: Path, wanted: AuditFilter) -> list[dict]:
    """What the viewer read before: every record parsed, filtered, newest first."""
    kept = []
    for line in path.read_bytes().splitlines():
        record = json.loads(line)
        day = str(record.get("time", ""))[:10]
        if ((wanted.user and record.get("user") != wanted.user)
                or (wanted.endpoint and record.get("endpoint") != wanted.endpoint)
                or (wanted.purpose and wanted.purpose.lower()
                    not in str(record.get("purpose", "")).lower())
                or (wanted.date_from and day < wanted.date_from)
                or (wanted.date_to and day > wanted.date_to)):
            continue
        kept.append(record)
    return kept[::-1]


def _write(log: AuditLog, n: int) -> None:
    for i in range(n):
        log.write(user=f"user{i % 3}", role="researcher",
                  purpose=["QA review", 'Study "12" \\ Ω'][i % 2],
                  endpoint=["search", "cohort", "report"][i % 3], params={"q": f"q{i}"},
                  counts={})


@pytest.mark.parametrize("wanted", [
    AuditFilter(), AuditFilter(user="user1"), AuditFilter(endpoint="cohort"),
    AuditFilter(purpose="qa"), AuditFilter(user="user2", purpose='"12" \\ ω'),
    AuditFilter(date_from="2000-01-01", date_to="2999-12-31"), AuditFilter(date_to="2000-01-01"),
    AuditFilter(user="nobody"),
])
def test_pages_equal_a_read_of_the_whole_log(tmp_path: Path, wanted: AuditFilter) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, checkpoint_every=7)
    _write(log, 40)
    index = AuditIndex(path)
    index.prepare().join()  # as the server builds it at start
    for offset, limit in ((0, 5), (3, 10), (0, 500), (35, 10)):
        total, page = index.page(wanted, offset, limit)
        expected = _whole_log(path, wanted)
        assert total == len(expected) and page == expected[offset : offset + limit]
    _write(log, 9)  # appended after the index was built: read incrementally
    total, page = index.page(wanted, 0, 500)
    assert (total, page) == (len(_whole_log(path, wanted)), _whole_log(path, wanted))
    log.close()


def test_the_index_follows_a_replaced_log_and_waits_for_a_whole_record(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    _write(log, 6)
    index = AuditIndex(path)
    assert index.page(AuditFilter(), 0, 100)[0] == 7
    with path.open("ab") as out:
        out.write(b'{"seq":7,"user":"half')  # a record still being written
    assert index.page(AuditFilter(), 0, 100)[0] == 7
    log.close()
    path.rename(tmp_path / "rotated.jsonl")
    log = AuditLog(path, accept_gap="rotated in a test")
    _write(log, 2)
    total, page = index.page(AuditFilter(), 0, 100)
    assert total == 3 and page[-1]["endpoint"] == "chain-start"
    with pytest.raises(InputError, match="date_from"):
        index.page(AuditFilter(date_from="yesterday"), 0, 10)
    log.close()
