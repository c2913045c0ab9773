"""The audit trail's keyed chain: appended records verify; any edit, forgery, removal,
reordering or cut is caught by ``clinsearch audit verify``, also by someone who can write the
log and recompute hashes but lacks the key (issue 27, item 3); a plain chain is only imported
by an admin's command, and a log gone while stopped only restarted after an acknowledged gap
(issue 42, item 4)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from clinsearch.errors import ClinsearchError
from clinsearch.server.audit import AuditLog, verify_log
from clinsearch.server.audit_chain import (
    HEAD_SLOT,
    head_path,
    newest_head,
    plain_hash,
    private_head_path,
)
from clinsearch.server.audit_key import default_key_path, load_key

from .conftest import clinsearch


def _write(log: AuditLog, n: int) -> None:
    for i in range(n):
        log.write(user="u", role="researcher", purpose="p", endpoint="search",
                  params={"q": f"query {i}"}, counts={"total": i})


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path)
    _write(log, 5)
    log.close()
    return path


def test_records_chain_and_resume(log_path: Path) -> None:
    assert verify_log(log_path).ok and verify_log(log_path).records == 6  # chain-start + 5
    first = json.loads(log_path.read_text().splitlines()[0])
    assert first["endpoint"] == "chain-start" and first["follows"] is None
    log = AuditLog(log_path)  # a restarted server continues the chain
    log.write(user="u", role="viewer", purpose="p", endpoint="cohort", params={}, counts={})
    log.close()
    result = verify_log(log_path)
    assert result.ok and result.records == 7 and result.keyed
    assert json.loads(log_path.read_text().splitlines()[-1])["seq"] == 6
    assert oct(log_path.stat().st_mode & 0o777) == "0o600"
    assert oct(default_key_path().stat().st_mode & 0o777) == "0o600"
    assert clinsearch("audit", "verify", str(log_path)).returncode == 0


def _edit(lines: list[str]) -> list[str]:
    record = json.loads(lines[2])
    record["counts"]["total"] = 99
    return [*lines[:2], json.dumps(record, separators=(",", ":")), *lines[3:]]


def _forge(lines: list[str]) -> list[str]:
    """Append a record linked to the last one by the mac the head shows, with a made-up mac."""
    last = json.loads(lines[-1])
    forged = {**last, "seq": last["seq"] + 1, "user": "mallory", "prev": last["mac"],
              "mac": hashlib.sha256(b"guess").hexdigest()}
    return [*lines, json.dumps(forged, separators=(",", ":"))]


@pytest.mark.parametrize("tamper", [
    pytest.param(_edit, id="edited"),
    pytest.param(lambda lines: lines[:1] + lines[2:], id="removed"),
    pytest.param(lambda lines: [lines[0], lines[2], lines[1], *lines[3:]], id="reordered"),
    pytest.param(lambda lines: lines[:-1], id="cut-off-the-end"),
    pytest.param(lambda lines: [*lines[:-1], lines[-1].replace('"u"', '"x"')], id="last-edited"),
    pytest.param(_forge, id="forged-record-appended"),
])
def test_tampering_is_detected(log_path: Path, tamper) -> None:  # type: ignore[no-untyped-def]
    lines = log_path.read_text().splitlines()
    log_path.write_text("\n".join(tamper(lines)) + "\n")
    assert not verify_log(log_path).ok
    result = clinsearch("audit", "verify", str(log_path), check=False)
    assert result.returncode == 1 and "tampered" in result.stderr
    with pytest.raises(ClinsearchError, match="fails verification"):
        AuditLog(log_path)  # a server refuses to extend a broken chain


def test_cut_records_and_a_deleted_head_are_detected(log_path: Path) -> None:
    lines = log_path.read_text().splitlines()
    log_path.write_text("\n".join(lines[:-2]) + "\n")
    head_path(log_path).unlink()
    problems = verify_log(log_path).problems
    assert any("head is missing" in p for p in problems)
    assert any("does not name the last record" in p for p in problems)  # the private head


def test_an_emptied_log_without_its_head_is_detected(log_path: Path) -> None:
    log_path.write_text("")
    head_path(log_path).unlink()
    assert not verify_log(log_path).ok  # the head in the key's private folder remains
    with pytest.raises(ClinsearchError, match="missing or empty but its head remains"):
        AuditLog(log_path)  # no silent new chain over the gap
    log = AuditLog(log_path, accept_gap="disk replaced, ticket 12")  # an admin acknowledges it
    log.close()
    first = json.loads(log_path.read_text().splitlines()[0])
    assert first["follows"]["reason"] == "the log was missing or empty at start"
    assert first["follows"]["records"] == 6
    assert first["follows"]["acknowledged"] == "disk replaced, ticket 12" and first["follows"]["by"]
    assert verify_log(log_path).ok and verify_log(log_path).follows == first["follows"]


def test_a_chain_recomputed_without_the_key_is_detected(log_path: Path) -> None:
    """The attack on the plain chain: edit a record, recompute every link and the head."""
    lines = _edit(log_path.read_text().splitlines())
    prev = json.loads(lines[0])["prev"]
    rewritten = []
    for line in lines:
        record = json.loads(line)
        record["prev"] = prev
        line = json.dumps(record, separators=(",", ":"))
        prev = plain_hash(line.encode())
        rewritten.append(line)
    log_path.write_text("\n".join(rewritten) + "\n")
    head_path(log_path).write_text(f"{len(rewritten) - 1} {prev}\n")
    assert not verify_log(log_path).ok


def test_anchored_checkpoints_catch_a_restored_older_log(log_path: Path) -> None:
    old = log_path.read_bytes(), head_path(log_path).read_bytes()
    private = private_head_path(default_key_path(), log_path)
    old_private = private.read_bytes()
    log = AuditLog(log_path)
    _write(log, 2)
    log.close()
    anchor = clinsearch("audit", "checkpoint", str(log_path)).stdout.strip()
    assert anchor.startswith("7:")
    log_path.write_bytes(old[0])  # every file the server wrote put back as it was
    head_path(log_path).write_bytes(old[1])
    private.write_bytes(old_private)
    assert verify_log(log_path).ok  # indistinguishable on this machine...
    result = clinsearch("audit", "verify", str(log_path), "--anchor", anchor, check=False)
    assert result.returncode == 1 and "anchored elsewhere" in result.stderr  # ...not off it


def test_crash_between_record_and_head_is_not_tampering(log_path: Path) -> None:
    heads = head_path(log_path), private_head_path(default_key_path(), log_path)
    before = [h.read_bytes() for h in heads]
    log = AuditLog(log_path)
    log.write(user="u", role="viewer", purpose="p", endpoint="search", params={}, counts={})
    log.close()
    for head, old in zip(heads, before, strict=True):
        head.write_bytes(old)  # the record reached the disk, its heads did not
    assert verify_log(log_path).ok
    AuditLog(log_path).close()  # a restarted server accepts the log and brings the heads up
    assert newest_head(heads[0], load_key(default_key_path(), create=False))[0] == 6
    heads[0].write_bytes(before[0])
    log_path.write_text("\n".join(log_path.read_text().splitlines()[:-2]) + "\n")
    assert not verify_log(log_path).ok  # a head ahead of the log: records were cut off


def test_heads_are_two_slots_rewritten_in_turn(log_path: Path) -> None:
    """Each record rewrites one slot of each head in place; a slot spoilt by a crash mid-write
    leaves the other, one record behind (as a crash before the write would), and a head
    removed while serving is written whole again with the next record."""
    heads = head_path(log_path), private_head_path(default_key_path(), log_path)
    key = load_key(default_key_path(), create=False)
    log = AuditLog(log_path)
    inodes = [h.stat().st_ino for h in heads]
    _write(log, 3)  # records 6, 7, 8
    assert [h.stat().st_ino for h in heads] == inodes  # rewritten in place, not replaced
    assert all(h.stat().st_size == 2 * HEAD_SLOT for h in heads)
    assert all(newest_head(h, key) == (8, verify_log(log_path).last_hash) for h in heads)
    for head in heads:  # slot 8 % 2 cut short by a crash
        data = bytearray(head.read_bytes())
        data[40:HEAD_SLOT] = b"\0" * (HEAD_SLOT - 40)
        head.write_bytes(bytes(data))
    assert all(newest_head(h, key)[0] == 7 for h in heads) and verify_log(log_path).ok
    head_path(log_path).unlink()
    _write(log, 1)
    log.close()
    assert newest_head(head_path(log_path), key)[0] == 9 and verify_log(log_path).ok
    log_path.write_text("\n".join(log_path.read_text().splitlines()[:-2]) + "\n")
    assert not verify_log(log_path).ok  # slot 9 names a record cut off the end


def test_a_chain_started_while_serving_names_itself_in_both_heads(log_path: Path) -> None:
    """A log rotated away while serving: the new chain's first record writes both slots, so
    no slot of the old chain outlives it, even when the record after it never comes."""
    log = AuditLog(log_path)
    _write(log, 1)
    log_path.rename(log_path.with_name("rotated.jsonl"))
    with pytest.raises(TypeError):  # the chain start is written, this record is not
        log.write(user="u", role="viewer", purpose="p", endpoint="search",
                  params={"q": object()}, counts={})
    log.close()
    assert verify_log(log_path).ok and verify_log(log_path).records == 1


def _plain_chain(path: Path, users: tuple[str, ...] = ("u", "u", "u")) -> str:
    """A first-format log (plain SHA-256 links) and its head, as anyone can write it."""
    prev, lines = "0" * 64, []
    for seq, user in enumerate(users):
        line = json.dumps({"seq": seq, "user": user, "prev": prev}, separators=(",", ":"))
        lines.append(line)
        prev = plain_hash(line.encode())
    path.write_text("\n".join(lines) + "\n")
    head_path(path).write_text(f"{len(lines) - 1} {prev}\n")
    return prev


def test_a_plain_chain_is_only_imported_by_command(tmp_path: Path) -> None:
    path = tmp_path / "audit.jsonl"
    prev = _plain_chain(path)
    assert not verify_log(path).ok and not verify_log(path).keyed  # no key, no proof
    refused = clinsearch("audit", "verify", str(path), check=False)
    assert refused.returncode == 1 and "not verifiable" in refused.stderr
    with pytest.raises(ClinsearchError, match="audit import"):
        AuditLog(path)  # a server never takes it over
    clinsearch("audit", "import", str(path))
    kept = [p for p in tmp_path.iterdir() if ".plain-" in p.name and not p.name.endswith(".head")]
    assert len(kept) == 1
    first = json.loads(path.read_text().splitlines()[0])
    assert first["follows"]["reason"].startswith("imported from a plain SHA-256 chain")
    assert first["follows"]["file"] == kept[0].name and first["follows"]["records"] == 3
    assert first["follows"]["last"] == prev and first["follows"]["by"]
    assert verify_log(path).ok and verify_log(path).keyed
    kept[0].write_text(kept[0].read_text().replace('"u"', '"x"'))  # the kept file edited
    assert any("not the one the keyed chain recorded" in p for p in verify_log(path).problems)


def test_a_keyed_log_replaced_by_a_plain_chain_is_not_laundered(log_path: Path) -> None:
    """Issue 42, item 4: a forged plain chain in place of the keyed log is refused on start
    and by import, and never verifies."""
    log_path.unlink()
    _plain_chain(log_path, ("admin", "admin", "admin"))
    with pytest.raises(ClinsearchError, match="plain"):
        AuditLog(log_path)
    imported = clinsearch("audit", "import", str(log_path), check=False)
    assert imported.returncode == 2 and "keyed chain here" in imported.stderr
    assert clinsearch("audit", "verify", str(log_path), check=False).returncode == 1


def test_a_key_others_may_read_or_beside_the_log_is_refused(tmp_path: Path) -> None:
    key = tmp_path / "keys" / "audit.key"
    AuditLog(tmp_path / "audit.jsonl", key).close()
    key.chmod(0o644)
    with pytest.raises(ClinsearchError, match="read or changed by others"):
        AuditLog(tmp_path / "audit.jsonl", key)
    with pytest.raises(ClinsearchError, match="apart from the log"):
        AuditLog(tmp_path / "other.jsonl", tmp_path / "audit.key")


def test_stale_head_temporaries_are_removed_on_start(log_path: Path) -> None:
    stale = log_path.parent / f".{log_path.name}.head.abc123.tmp"  # as a kill -9 leaves it
    stale.write_text("0 x\n")
    AuditLog(log_path).close()
    assert not stale.exists()
    assert not list(log_path.parent.glob(".*.tmp"))


def test_periodic_checkpoints_are_chained_and_logged(tmp_path: Path,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "audit.jsonl"
    with caplog.at_level("INFO", logger="clinsearch.audit"):
        log = AuditLog(path, checkpoint_every=3)
        _write(log, 5)
        log.close()
    records = [json.loads(line) for line in path.read_text().splitlines()]
    checkpoints = [r for r in records if r["endpoint"] == "checkpoint"]
    assert [r["records"] for r in checkpoints] == [3, 6]
    logged = [m for m in caplog.messages if m.startswith("audit checkpoint (periodic)")]
    assert len(logged) == 2 and checkpoints[0]["mac"] in logged[0]
    anchor = logged[0].split("record ")[1].replace(" mac ", ":")
    assert clinsearch("audit", "verify", str(path), "--anchor", anchor).returncode == 0
