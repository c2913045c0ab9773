"""The REST API over HTTP, against a real ``clinsearch serve`` on 127.0.0.1."""

from __future__ import annotations

import csv
import io
import json
import re
import time
from pathlib import Path

from clinsearch import Index
from clinsearch.search.cohort import Cohort

from .conftest import Server, clinsearch

NEGATED = "no pneumothorax"


def test_openapi_schema_lists_the_api(server: Server) -> None:
    paths = server.call("GET", "/openapi.json", role=None).json()["paths"]
    for path in ("/api/search", "/api/cohort", "/api/cohort/export", "/api/reports/{report_id}",
                 "/api/explain-query", "/api/annotate", "/api/info"):
        assert path in paths


def test_page_and_its_assets_are_served_locally(server: Server) -> None:
    page = server.call("GET", "/", role=None)
    assert page.status == 200 and "<title>clinsearch</title>" in page.text
    assets = re.findall(r'(?:src|href)="([^"#]+)"', page.text)
    assert assets and all(a.startswith("/static/") for a in assets)
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    for asset in assets:
        answer = server.call("GET", asset, role=None)
        assert answer.status == 200
        assert not re.search(r"https?://", answer.text)  # nothing fetched from elsewhere


def test_every_api_call_needs_a_valid_token(server: Server) -> None:
    assert server.call("GET", "/api/session", role=None).json()["auth_required"] is True
    assert server.call("GET", "/api/info", role=None).status == 401
    assert server.call("GET", "/api/search", role=None, params={"q": "x"}).status == 401
    assert server.call("GET", "/api/info", token="not-a-token").status == 401
    info = server.call("GET", "/api/info").json()
    assert info["user"] == {"name": "researcher1", "role": "researcher"}
    assert info["counts"]["reports"] == Index.open(server.index).manifest.counts.reports


def test_data_access_needs_a_stated_purpose(server: Server) -> None:
    answer = server.call("GET", "/api/search", purpose=None, params={"q": NEGATED})
    assert answer.status == 400 and "purpose" in answer.json()["detail"]


def test_negated_query_returns_denials_with_their_findings(server: Server) -> None:
    data = server.call("GET", "/api/search", params={"q": NEGATED, "method": "concept",
                                                     "top": 5}).json()
    assert data["total"] >= len(data["hits"]) == 5
    for hit in data["hits"]:
        assert set(hit) >= {"rank", "id", "score", "report_id", "patient_id", "sentence",
                            "highlights", "explanation", "findings"}
        polarities = {f["polarity"] for f in hit["findings"] if f["concept"] == "pneumothorax"}
        assert polarities == {"absent"}
        for f in hit["findings"]:
            assert hit["sentence"][f["start"]:f["end"]] == f["text"]


def test_search_is_the_python_api_and_pages_through_it(server: Server) -> None:
    index = Index.open(server.index)
    for method, level in (("bm25", "report"), ("concept", "patient"),
                          ("bm25:whole_report=true", "visit")):  # method specs as in the CLI
        expected = [h.id for h in index.search("pleural effusion", level, 6, method)]
        pages = [server.call("GET", "/api/search", params={
            "q": "pleural effusion", "method": method, "level": level, "top": 3,
            "offset": offset}).json() for offset in (0, 3)]
        assert [h["id"] for p in pages for h in p["hits"]] == expected
        assert [h["rank"] for p in pages for h in p["hits"]] == list(range(1, 7))


def test_filters_restrict_dates_types_and_sections(server: Server) -> None:
    params = {"q": "pleural effusion", "method": "bm25", "top": 20}
    every = server.call("GET", "/api/search", params=params).json()

    def date(report_id: str) -> str:
        return server.call("GET", f"/api/reports/{report_id}").json()["report"]["date"]

    dates = sorted(date(h["report_id"]) for h in every["hits"])
    middle = dates[len(dates) // 2]
    late = server.call("GET", "/api/search", params=params | {"date_from": middle}).json()
    assert late["hits"] and all(date(h["report_id"]) >= middle for h in late["hits"])
    deep = {"offset": 180}  # a page beyond the first 50 hits: totals of the deepest search
    assert (server.call("GET", "/api/search", params=params | deep | {"date_from": middle})
            .json()["total"] < server.call("GET", "/api/search", params=params | deep)
            .json()["total"])
    impression = server.call("GET", "/api/search", params=params | {"section": "impression"})
    for hit in impression.json()["hits"]:
        view = server.call("GET", f"/api/reports/{hit['report_id']}").json()
        section = {s["id"]: s["section"] for s in view["sentences"]}[hit["sentence_id"]]
        assert section == "impression"
    none = server.call("GET", "/api/search", params=params | {"type": "no such type"}).json()
    assert none["hits"] == [] and none["total"] == 0


def test_bad_input_gets_the_cli_message(server: Server) -> None:
    cases = [
        (["search", str(server.index), "x", "--method", "nope"],
         {"q": "x", "method": "nope"}),
        (["search", str(server.index), "x", "--polarity", "sideways"],
         {"q": "x", "polarity": "sideways"}),
    ]
    for argv, params in cases:
        cli = clinsearch(*argv, check=False)
        assert cli.returncode == 2
        answer = server.call("GET", "/api/search", params=params)
        assert answer.status == 400
        assert cli.stderr.strip() == f"error: {answer.json()['detail']}"
    query = "pneumonia AND NOT )"
    cli = clinsearch("cohort", str(server.index), query, check=False)
    answer = server.call("POST", "/api/cohort", body={"query": query, "level": "patient"})
    assert answer.status == 400 and answer.json()["column"] == 19
    assert cli.stderr.strip() == f"error: {answer.json()['detail']}"
    assert answer.json()["detail"].endswith("  pneumonia AND NOT )\n                    ^")
    assert server.call("GET", "/api/search", params={"q": "x", "top": 0}).status == 422
    for bad in ({"context": "sideways"}, {"date_to": "2020-02-30"}):
        answer = server.call("GET", "/api/search", params={"q": "x"} | bad)
        assert answer.status == 400 and next(iter(bad)) in answer.json()["detail"]
    assert server.call("GET", "/api/search", params={"q": "x", "top": "ten"}).status == 422
    assert server.call("POST", "/api/cohort", body={"level": "patient"}).status == 422


def test_cohort_counts_members_and_export_match_the_cli(server: Server, tmp_path: Path) -> None:
    query = 'pleural effusion AND NOT "no pneumothorax"'
    data = server.call("POST", "/api/cohort",
                       body={"query": query, "level": "report", "limit": 5}).json()
    cohort = Cohort(server.index)
    assert data["counts"] == cohort.counts(query)
    members = cohort.members(query, "report")
    assert data["total"] == len(members) and len(data["members"]) == min(5, len(members))
    assert [m["ids"] for m in data["members"]] == [list(m.ids) for m in members[:5]]
    export = server.call("GET", "/api/cohort/export", params={"query": query, "level": "report"})
    assert export.status == 200 and export.headers["content-type"].startswith("text/csv")
    cli_csv = tmp_path / "cli.csv"
    clinsearch("cohort", str(server.index), query, "--level", "report", "--export", str(cli_csv))
    assert export.text == cli_csv.read_bytes().decode("utf-8")
    assert export.text.startswith(f"# cohort definition: {query}; level report\r\n"
                                  "# tiers counted: stated, partial\r\n")
    assert len(list(csv.reader(io.StringIO(export.text)))) == 2 + len(members) + 1


def test_report_view_has_sections_sentences_and_findings(server: Server) -> None:
    view = server.call("GET", "/api/reports/P001-R1").json()
    text = view["report"]["text"]
    assert view["report"]["source"] == "sample_reports.jsonl:1"  # no server folders shown
    assert [s["name"] for s in view["sections"]][-2:] == ["findings", "impression"]
    for s in view["sentences"]:
        assert text[s["start"]:s["end"]] == s["text"]
    negated = [f for f in view["findings"] if f["concept"] == "pneumothorax"]
    assert negated and negated[0]["polarity"] == "absent"
    trigger = negated[0]["trigger"]  # the cue that negated it, with its words in the report
    assert trigger["category"] == "NEGATED_EXISTENCE" and trigger["rule"]
    assert text[trigger["start"]:trigger["end"]] == trigger["text"]
    for f in view["findings"]:
        assert text[f["start"]:f["end"]] == f["text"]
    missing = server.call("GET", "/api/reports/NOPE")
    assert missing.status == 404 and "NOPE" in missing.json()["detail"]


def test_viewer_sees_counts_only(server: Server) -> None:
    search = server.call("GET", "/api/search", role="viewer", params={"q": NEGATED}).json()
    assert search["hits"] == [] and search["total"] > 0
    cohort = server.call("POST", "/api/cohort", role="viewer",
                         body={"query": "pleural effusion", "level": "patient"}).json()
    assert cohort["counts"]["report"] > 0 and cohort["members"] == []
    assert server.call("GET", "/api/reports/P001-R1", role="viewer").status == 403
    assert server.call("GET", "/api/cohort/export", role="viewer",
                       params={"query": "pleural effusion"}).status == 403


def test_admin_manages_users(server: Server) -> None:
    assert server.call("GET", "/api/users").status == 403  # researcher
    made = server.call("POST", "/api/users", role="admin",
                       body={"name": "temp1", "role": "viewer"}).json()
    assert server.call("GET", "/api/info", token=made["token"]).json()["user"]["role"] == "viewer"
    stored = server.users.read_text()
    assert made["token"] not in stored  # only its hash is kept
    assert "temp1" in [u["name"] for u in server.call("GET", "/api/users", role="admin")
                       .json()["users"]]
    assert server.call("DELETE", "/api/users/temp1", role="admin").status == 200
    changes = [json.loads(line) for line in server.audit.read_text().splitlines()[-2:]]
    assert [(r["endpoint"], r["user"]) for r in changes] == [("users/add", "admin1"),
                                                             ("users/remove", "admin1")]
    assert server.call("GET", "/api/info", token=made["token"]).status == 401


def test_explain_query_and_annotate(server: Server) -> None:
    explained = server.call("GET", "/api/explain-query", params={"q": "RLL pneumonia"}).json()
    assert explained["groups"][0][0]["pattern"] == "disease|present|pneumonia|right|lower lobe"
    assert explained["groups"][0][0]["context"] == []
    history = server.call("GET", "/api/explain-query", params={"q": "history of pneumonia"})
    assert history.json()["groups"][0][0]["context"] == ["historical"]  # what search asks for
    found = server.call("POST", "/api/annotate", body={"text": "No pneumothorax."}).json()
    assert [(f["concept"], f["polarity"]) for f in found["findings"]] == [
        ("pneumothorax", "absent")]
    assert found["findings"][0]["trigger"] == {
        "rule": "no", "category": "NEGATED_EXISTENCE", "text": "No", "start": 0, "end": 2}
    found = server.call("POST", "/api/annotate",
                        body={"text": "Please correlate clinically for pneumonia."}).json()
    [finding] = found["findings"]
    assert (finding["polarity"], finding["trigger"]["rule"]) == (
        "uncertain", "correlate clinically for")
    assert server.call("POST", "/api/annotate", body={"text": " "}).status == 400


def test_every_access_is_audited_without_report_text(server: Server) -> None:
    before = server.audit.read_text().count("\n")
    hits = server.call("GET", "/api/search", params={"q": NEGATED, "top": 3}).json()["hits"]
    view = server.call("GET", "/api/reports/P002-R1").json()
    server.call("POST", "/api/cohort", body={"query": "cardiomegaly", "level": "patient"})
    server.call("GET", "/api/cohort/export", params={"query": "cardiomegaly"})
    lines = server.audit.read_text().splitlines()
    records = [json.loads(line) for line in lines[before:]]
    assert [r["endpoint"] for r in records] == ["search", "report", "cohort", "cohort/export"]
    for r in records:
        assert r["user"] == "researcher1" and r["role"] == "researcher"
        assert r["purpose"] == "test: service checks" and r["time"].endswith("Z")
    assert records[0]["params"]["q"] == NEGATED and records[0]["counts"]["returned"] == 3
    assert records[3]["counts"]["exported"] == records[2]["counts"]["patient"]
    verified = clinsearch("audit", "verify", str(server.audit))
    assert "chain intact" in verified.stdout
    texts = [h["sentence"] for h in hits] + [s["text"] for s in view["sentences"]]
    written = server.audit.read_text() + server.log.read_text()
    assert not [t for t in texts if len(t) > 20 and t in written]


def test_server_follows_add_and_delete(server: Server, tmp_path: Path) -> None:
    new = tmp_path / "new.jsonl"
    report = {"id": "ZZ-1", "patient_id": "ZZ", "visit_id": "ZZ-V1", "text":
              "FINDINGS: Large left tension pneumothorax with mediastinal shift."}
    new.write_text(json.dumps(report) + "\n")
    first = server.call("GET", "/api/info").json()["generation"]
    clinsearch("add", str(server.index), str(new), "--format", "jsonl")
    info = _wait_for_new_generation(server, first)
    search = server.call("GET", "/api/search", params={"q": "tension pneumothorax",
                                                       "method": "bm25", "top": 1}).json()
    assert search["generation"] == info["generation"]
    assert search["hits"][0]["report_id"] == "ZZ-1"
    clinsearch("delete", str(server.index), "--ids", "ZZ-1")
    _wait_for_new_generation(server, info["generation"])
    assert server.call("GET", "/api/reports/ZZ-1").status == 404


def _wait_for_new_generation(server: Server, old: str) -> dict:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        info = server.call("GET", "/api/info").json()
        if info["generation"] != old:
            return info
        time.sleep(0.2)
    raise AssertionError("the server did not move to the new generation")


def test_non_loopback_host_is_refused_without_authentication(tmp_path: Path,
                                                             sample_index: Path) -> None:
    empty = tmp_path / "users.json"
    for extra in ([], ["--no-auth"]):
        result = clinsearch("serve", str(sample_index), "--host", "0.0.0.0", "--users", str(empty),
                            "--audit-log", str(tmp_path / "a.jsonl"), *extra, check=False)
        assert result.returncode == 2
        assert "0.0.0.0" in result.stderr


def test_users_file_keeps_only_token_hashes(server: Server) -> None:
    import hashlib

    stored = server.users.read_text()
    for token in server.tokens.values():
        assert token not in stored and hashlib.sha256(token.encode()).hexdigest() in stored
    assert oct(server.users.stat().st_mode & 0o777) == "0o600"


def test_server_log_keeps_paths_without_query_strings(server: Server) -> None:
    marker = "pneumothorax querymarker7"
    server.call("GET", "/api/search", params={"q": marker, "top": 1})
    server.call("GET", "/api/cohort/export", params={"query": "cardiomegaly"})
    log = server.log.read_text()
    assert "GET /api/search HTTP" in log and "/api/cohort/export HTTP" in log
    assert "querymarker7" not in log and "cardiomegaly" not in log
    assert "querymarker7" in server.audit.read_text()  # the audit trail keeps what was asked


def test_a_phrase_no_concept_names_is_matched_as_text(server: Server) -> None:
    data = server.call("GET", "/api/search", params={"q": "discussed with Dr",
                                                     "method": "concept", "top": 3}).json()
    assert data["hits"]
    for hit in data["hits"]:
        assert hit["explanation"]["match"] == "text"
        assert [hit["sentence"][s:e] for s, e in hit["highlights"]] == ["discussed"]
    concept = server.call("GET", "/api/search", params={"q": "pneumothorax",
                                                        "method": "concept", "top": 1}).json()
    assert concept["hits"][0]["explanation"]["match"] == "concept"


def test_search_hits_say_their_tier_and_trigger(server: Server) -> None:
    answer = server.call("GET", "/api/search", params={
        "q": "pneumonia", "method": "concept", "level": "sentence", "top": 100}).json()
    tiers = {t["tier"]: t for t in answer["tiers"]}
    assert list(tiers)[:2] == ["stated", "partial"]  # strongest first
    assert tiers["indication"]["label"] == "stated only as the reason for the exam"
    assert tiers["hypothetical"]["count"] == 7  # "Cough, rule out pneumonia." in 7 reports
    triggers = {(h["explanation"]["tier"], (h["explanation"]["trigger"] or {}).get("text"))
                for h in answer["hits"]}
    assert ("hypothetical", "rule out") in triggers
    assert ("hedged", "cannot be excluded") in triggers
    assert {t for tier, t in triggers if tier == "stated"} == {None}
    # stated now, partial and hedged rank together by completeness, then tier by tier
    band = ("stated", "partial", "hedged")
    order = [0 if h["explanation"]["tier"] in band else list(tiers).index(h["explanation"]["tier"])
             for h in answer["hits"]]
    assert order == sorted(order) and order[-1] > 0
    negated = server.call("GET", "/api/search", params={
        "q": "no pneumonia", "method": "concept", "level": "sentence", "top": 100}).json()
    assert {h["explanation"]["tier"] for h in negated["hits"]} <= {"stated", "partial"}
    assert all(f["polarity"] != "present" for h in negated["hits"] for f in h["findings"]
               if f["concept"] == "pneumonia")
