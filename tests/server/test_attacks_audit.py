"""Issue 42, items 4 to 10: the third round of attacks on the audit trail, the id lists, the
access log and the service's answers, each over real HTTP against a real ``clinsearch serve``
(or on its real files), and each refused."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from clinsearch.server.audit_chain import head_path, plain_hash

from .conftest import Server, free_port, serving
from .test_attacks import raw


def _records(server: Server) -> list[dict]:
    return [json.loads(line) for line in server.audit.read_text().splitlines()]


def _last(server: Server) -> dict:
    return _records(server)[-1]


def _refused_start(index: Path, audit: Path, *options: str) -> str:
    """``clinsearch serve`` that must refuse to start: its one error line (exit 2)."""
    done = subprocess.run(
        [sys.executable, "-m", "clinsearch", "serve", str(index), "--port", str(free_port()),
         "--no-auth", "--audit-log", str(audit), *options],
        capture_output=True, text=True, timeout=120, env=os.environ | {"COLUMNS": "300"})
    assert done.returncode == 2, done.stdout + done.stderr
    return done.stderr


def _forged_plain_chain(path: Path) -> None:
    """Three records in the first (plain SHA-256) format, with their head: no key needed."""
    prev, lines = "0" * 64, []
    for seq in range(3):
        line = json.dumps({"seq": seq, "user": "admin", "endpoint": "search", "prev": prev},
                          separators=(",", ":"))
        lines.append(line)
        prev = plain_hash(line.encode())
    path.write_text("\n".join(lines) + "\n")
    head_path(path).write_text(f"2 {prev}\n")


def test_a_log_replaced_or_removed_while_stopped_is_not_laundered(sample_index: Path,
                                                                  tmp_path: Path) -> None:
    """Item 4: a forged plain chain, or no log at all, in place of the keyed log."""
    from ..security.hostile import run

    audit = tmp_path / "audit.jsonl"
    with serving(sample_index, audit, tmp_path / "first.log") as server:
        assert server.call("GET", "/api/search", role=None, params={"q": "effusion"}).status == 200
    audit.unlink()
    _forged_plain_chain(audit)
    refused = _refused_start(sample_index, audit)
    assert "plain (unkeyed) audit log" in refused and "clinsearch audit import" in refused
    code, _, err = run("audit", "verify", audit)
    assert code == 1 and "plain SHA-256 chain" in err  # never verifies without the key
    code, _, err = run("audit", "import", audit)
    assert code == 2 and "keyed chain here" in err  # this server's key wrote one there
    assert not list(tmp_path.glob("*.plain-*"))

    audit.unlink()
    head_path(audit).unlink()  # the log and its head deleted while the server was stopped
    refused = _refused_start(sample_index, audit)
    assert "missing or empty but its head remains" in refused and "--accept-audit-gap" in refused
    assert not audit.exists()
    with serving(sample_index, audit, tmp_path / "again.log",
                 options=("--accept-audit-gap", "restored disk, ticket 7")) as server:
        first = _records(server)[0]
    assert first["follows"]["acknowledged"] == "restored disk, ticket 7"
    assert first["follows"]["reason"] == "the log was missing or empty at start"
    assert first["follows"]["by"]
    code, out, _ = run("audit", "verify", audit)
    assert code == 0 and "restored disk, ticket 7" in out  # the gap is shown with who accepted it


def test_a_symlink_or_open_file_in_the_logs_place_is_refused(sample_index: Path,
                                                            tmp_path: Path) -> None:
    """Item 10: the log is opened with O_NOFOLLOW and must stay private."""
    audit, elsewhere = tmp_path / "audit.jsonl", tmp_path / "elsewhere.jsonl"
    with serving(sample_index, audit, tmp_path / "server.log") as server:
        search = {"q": "effusion"}
        assert server.call("GET", "/api/search", role=None, params=search).status == 200
        audit.rename(tmp_path / "rotated.jsonl")
        elsewhere.touch(mode=0o600)
        audit.symlink_to(elsewhere)
        answer = server.call("GET", "/api/search", role=None, params=search)
        assert answer.status == 503 and elsewhere.stat().st_size == 0
        audit.unlink()
        audit.touch(mode=0o644)
        audit.chmod(0o644)
        answer = server.call("GET", "/api/search", role=None, params=search)
        assert answer.status == 503 and "chmod 600" in answer.text
        assert audit.stat().st_size == 0 and oct(audit.stat().st_mode & 0o777) == "0o644"
        audit.chmod(0o600)  # made private: a new chain that names the one rotated away
        assert server.call("GET", "/api/search", role=None, params=search).status == 200
    audit.unlink()
    head_path(audit).unlink()
    audit.symlink_to(tmp_path / "rotated.jsonl")
    assert "symbolic link" in _refused_start(sample_index, audit)


def _second_researcher(server: Server) -> str:
    if "researcher2" not in server.tokens:
        made = server.call("POST", "/api/users", role="admin",
                           body={"name": "researcher2", "role": "researcher"})
        server.tokens["researcher2"] = made.json()["token"]
    return server.tokens["researcher2"]


def test_id_lists_are_their_owners_only_and_audited(server: Server) -> None:
    """Item 5: another researcher reads no list by its number; every read is audited."""
    upload = server.call("POST", "/api/lists", body={
        "name": "mine", "kind": "patient", "csv": "patient_id\nP001\nP002\nNOTINDEX9\n"})
    assert upload.status == 200, upload.text
    mine = upload.json()["id"]
    assert _last(server)["disclosed"]["patients"]["ids"] == ["NOTINDEX9", "P001", "P002"]
    other = _second_researcher(server)
    before = len(_records(server))
    for path, params in ((f"/api/lists/{mine}", None),
                         ("/api/lists/compare", {"a": mine, "b": mine})):
        answer = server.call("GET", path, role=None, token=other, params=params)
        assert answer.status == 404 and "NOTINDEX9" not in answer.text
    cohort = server.call("POST", "/api/cohort", role=None, token=other,
                         body={"query": "effusion", "list_id": mine})
    assert cohort.status == 404
    assert len(_records(server)) == before  # nothing disclosed, nothing recorded
    assert server.call("GET", "/api/lists/999999", role=None, token=other).text == \
        server.call("GET", f"/api/lists/{mine}", role=None, token=other).text.replace(
            str(mine), "999999")  # another's list answers as one that does not exist
    own = server.call("GET", f"/api/lists/{mine}")
    assert own.status == 200 and own.json()["ids"] == ["P001", "P002", "NOTINDEX9"]
    record = _last(server)
    assert record["endpoint"] == "lists/read"
    assert record["disclosed"]["patients"]["ids"] == ["NOTINDEX9", "P001", "P002"]
    compared = server.call("GET", "/api/lists/compare", params={"a": mine, "b": mine})
    assert compared.status == 200
    assert _last(server)["endpoint"] == "lists/compare"
    assert _last(server)["disclosed"]["patients"]["ids"] == ["NOTINDEX9", "P001", "P002"]


def _a_patient(server: Server) -> str:
    hit = server.call("GET", "/api/search", params={"q": "effusion"}).json()["hits"][0]
    return str(hit["patient_id"])


def test_every_answer_naming_ids_is_audited_with_them(server: Server) -> None:
    """Item 6: the timeline, a rerun, a search, a report and the audit viewer record what
    they disclosed."""
    hits = server.call("GET", "/api/search", params={"q": "effusion", "top": 5}).json()["hits"]
    shown = _last(server)["disclosed"]
    assert shown["patients"]["ids"] == sorted({h["patient_id"] for h in hits})
    patient = _a_patient(server)
    timeline = server.call("GET", f"/api/patients/{urllib.parse.quote(patient)}/timeline")
    assert timeline.status == 200
    reports = sorted(r["report_id"] for r in timeline.json()["reports"])
    record = _last(server)
    assert record["endpoint"] == "patients/timeline"
    assert record["disclosed"]["patients"]["ids"] == [patient]
    assert record["disclosed"]["reports"]["ids"] == reports

    saved = server.call("POST", "/api/saved", body={
        "name": "effusions", "kind": "cohort", "state": {"query": "effusion"}}).json()
    workbench = server.audit.parent / "clinsearch-workbench.sqlite"
    with sqlite3.connect(workbench) as db:  # as if the index had changed since it was saved
        db.execute("UPDATE saved SET members = '[]' WHERE id = ?", (saved["id"],))
    rerun = server.call("POST", f"/api/saved/{saved['id']}/rerun").json()
    assert rerun["added_ids"]
    record = _last(server)
    assert record["endpoint"] == "saved/rerun"
    disclosed = record["disclosed"]["patients"]
    assert disclosed.get("ids") or disclosed["count"] == len(rerun["added_ids"])
    assert disclosed.get("ids", rerun["added_ids"]) == rerun["added_ids"]

    page = server.call("GET", "/api/audit", role="admin", params={"limit": 3}).json()
    record = _last(server)
    assert record["endpoint"] == "audit/records" and record["purpose"] == "audit review"
    assert record["disclosed"]["audit records"]["ids"] == sorted(
        str(r["seq"]) for r in page["records"])


def test_the_access_log_holds_no_ids_of_any_route(server: Server) -> None:
    """Item 8: every path segment that is not a route's word is logged as {id}."""
    patient = _a_patient(server)
    quoted = urllib.parse.quote(patient)
    server.call("GET", f"/api/patients/{quoted}/timeline")
    listed = server.call("POST", "/api/lists", body={"name": "l", "csv": "P777\n"}).json()["id"]
    server.call("GET", f"/api/lists/{listed}")
    server.call("PUT", "/api/bundles/secretname", body={"terms": ["effusion"]})
    log = server.log.read_text()
    assert "GET /api/patients/{id}/timeline HTTP" in log
    assert f"/api/patients/{quoted}/" not in log
    assert "GET /api/lists/{id} HTTP" in log and f"/api/lists/{listed} " not in log
    assert "PUT /api/bundles/{id} HTTP" in log and "secretname" not in log


def test_other_origin_ports_and_non_utf8_queries_are_refused(server: Server) -> None:
    """Item 10: the Origin's port counts; ``%FF`` in a query string is no text."""
    port = server.base.rsplit(":", 1)[1]
    headers = {"X-Purpose": "x", "Content-Type": "application/json",
               "Authorization": f"Bearer {server.tokens['researcher']}"}
    body = json.dumps({"query": "effusion"}).encode()
    for origin in ("http://127.0.0.1:1", "http://127.0.0.1", f"https://127.0.0.1:{int(port) + 1}"):
        answer = raw(server, "POST", "/api/cohort", headers | {"Origin": origin}, body)
        assert answer.status == 403, origin
    same = raw(server, "POST", "/api/cohort", headers | {"Origin": f"http://localhost:{port}"},
               body)
    assert same.status == 200
    bad = raw(server, "GET", "/api/search?q=pneumonia%FF", headers)
    assert bad.status == 400 and "not UTF-8" in bad.body
    assert raw(server, "GET", "/api/search?q=pneumonia%C3%A9", headers).status == 200
    assert raw(server, "GET", "/api/patients/P%FF/timeline", headers).status == 400


@pytest.mark.parametrize(("path", "body"), [
    pytest.param("/api/bundles/import", {"format": "clinsearch-bundle/1", "name": "a\ud800",
                                         "terms": ["effusion"]}, id="bundle-name"),
    pytest.param("/api/bundles/import", {"format": "clinsearch-bundle/1", "name": "ok",
                                         "terms": ["effusion \udfff"]}, id="bundle-term"),
    pytest.param("/api/saved", {"name": "s", "kind": "cohort",
                                "state": {"query": "effusion", "x": "\ud800"}}, id="saved-state"),
    pytest.param("/api/lists", {"name": "l", "csv": "P\ud800"}, id="list"),
])
def test_lone_surrogates_in_any_body_are_refused(server: Server, path: str, body: dict) -> None:
    """Item 10: text that is no Unicode is a 422 naming its field, never a 500."""
    before = server.audit.stat().st_size
    answer = server.call("POST", path, body=body)
    assert answer.status == 422 and "not UTF-8" in answer.text, answer.text
    assert server.audit.stat().st_size == before


@pytest.mark.parametrize("name", ["evil\u202egnp.exe", "a\x00b", "line\nbreak", "zero\u200bwidth"])
def test_names_with_control_or_bidi_characters_are_refused(server: Server, name: str) -> None:
    """Item 10: names the page shows hold visible characters only."""
    answer = server.call("POST", "/api/bundles/import", body={
        "format": "clinsearch-bundle/1", "name": name, "terms": ["effusion"]})
    assert answer.status == 400 and "U+" in answer.text, answer.text
    listed = server.call("POST", "/api/lists", body={"name": name, "csv": "P001\n"})
    assert listed.status == 400


@pytest.mark.parametrize("csv", [
    pytest.param('patient_id\n"P029\nP030\nP031"\nP032\n', id="quoted-lines"),
    pytest.param('patient_id\nP0"29\n', id="quote"),
    pytest.param("patient_id\n" + "x" * 140_000 + "\n", id="field-over-128k"),
    pytest.param('patient_id\n"' + "x" * 140_000 + '"\n', id="quoted-field-over-128k"),
])
def test_id_list_uploads_refuse_merged_and_huge_ids(server: Server, csv: str) -> None:
    """Items 7 and 10: a quote left open never makes one id of several lines."""
    answer = server.call("POST", "/api/lists", body={"name": "merged", "csv": csv})
    assert answer.status == 400 and "line " in answer.text, answer.text
    assert len(answer.text) < 600


def test_a_users_file_others_may_change_answers_503(server: Server) -> None:
    """Item 10: a users file the server must refuse is its administrator's problem: 503."""
    stamp = server.users.stat()
    try:
        server.users.chmod(0o664)
        os.utime(server.users, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 1_000_000))
        answer = server.call("GET", "/api/info")
        assert answer.status == 503 and "users file" in answer.text
        assert str(server.users.parent) not in answer.text
    finally:
        server.users.chmod(0o600)
        os.utime(server.users, ns=(stamp.st_atime_ns, stamp.st_mtime_ns + 2_000_000))
    assert server.call("GET", "/api/info").status == 200
