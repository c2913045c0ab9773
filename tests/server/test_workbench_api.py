"""The workbench's REST API over HTTP against a real ``clinsearch serve``: term bundles, id
lists, saved cohorts and history, patient timelines, chart counts and the audit viewer, each
checked against the Python API, with roles, bad input and what is stored."""

from __future__ import annotations

import json
import stat
import urllib.parse
from datetime import UTC, datetime

from clinsearch.search.cohort import Cohort
from clinsearch.server.small_counts import ROUND_TO
from clinsearch.server.workbench_store import WORKBENCH_FILE

from .conftest import Server

TERMS = ["pneumonia", "consolidation", "bronchograms"]


def put_bundle(server: Server, name: str, terms: list[str], *, shared: bool = False,
               role: str = "researcher") -> dict:
    answer = server.call("PUT", bundle_path(name), role=role,
                         body={"terms": terms, "shared": shared})
    assert answer.status == 200, answer.text
    return answer.json()


def bundle_path(name: str, then: str = "") -> str:
    return "/api/bundles/" + urllib.parse.quote(name) + then


def upload(server: Server, name: str, ids: list[str], kind: str = "patient",
           role: str = "researcher") -> dict:
    answer = server.call("POST", "/api/lists", role=role,
                         body={"name": name, "kind": kind, "csv": "id\n" + "\n".join(ids)})
    assert answer.status == 200, answer.text
    return answer.json()


def test_bundles_read_terms_as_findings_or_text_and_count_as_the_python_api(
        server: Server) -> None:
    shown = put_bundle(server, "api infection", TERMS)
    assert [r["read_as"] for r in shown["readings"]] == ["finding", "finding", "text"]
    cohort = Cohort(server.index)
    query = 'bundle:"API Infection" AND NOT "pleural effusion"'  # names compare folded
    got = server.call("POST", "/api/cohort", body={"query": query, "level": "report"}).json()
    expected = cohort.counts(query, cohort.scope({"api infection": TERMS}))
    assert got["counts"] == expected
    # the OR of the terms: no fewer than the finding alone, and negated mentions left out
    assert expected["report"] >= cohort.counts('pneumonia AND NOT "pleural effusion"')["report"]
    unknown = server.call("POST", "/api/cohort", body={"query": 'bundle:"nothing" AND x'})
    assert unknown.status == 400 and unknown.json()["column"] == 1
    assert "unknown bundle" in unknown.json()["detail"]


def test_bundles_are_private_unless_shared_and_travel_as_files(server: Server) -> None:
    put_bundle(server, "private terms", ["pneumothorax"])
    put_bundle(server, "shared terms", ["pneumothorax", "collapsed lung"], shared=True)
    theirs = {b["name"] for b in server.call("GET", "/api/bundles", role="admin").json()["bundles"]}
    assert "shared terms" in theirs and "private terms" not in theirs
    assert server.call("DELETE", bundle_path("shared terms"), role="admin").status == 404
    exported = server.call("GET", bundle_path("shared terms", "/export"))
    assert exported.status == 200
    assert 'filename="bundle-shared-terms.json"' in exported.headers["content-disposition"]
    body = exported.json()
    body["name"] = "imported terms"
    imported = server.call("POST", "/api/bundles/import", role="admin", body=body).json()
    assert imported["terms"] == ["pneumothorax", "collapsed lung"]
    assert imported["owner"] == "admin1"
    wrong = server.call("POST", "/api/bundles/import", body=body | {"format": "csv"})
    assert wrong.status == 400 and "field 'format'" in wrong.json()["detail"]
    quoted = server.call("PUT", "/api/bundles/bad", body={"terms": ['say "no"']})
    assert quoted.status == 400 and "field 'terms'" in quoted.json()["detail"]
    empty = server.call("PUT", "/api/bundles/bad", body={"terms": [" "]})
    assert empty.status == 400 and "at least one term" in empty.json()["detail"]


def test_id_lists_restrict_cohorts_and_compare(server: Server) -> None:
    first = upload(server, "first", ["P001", "P029", "P030", "P043", "NOPE"])
    assert (first["size"], first["found"], first["missing"]) == (5, 4, 1)
    assert first["missing_examples"] == ["NOPE"]
    second = upload(server, "second", ["P030", "P043", "P050"])
    cohort = Cohort(server.index)
    mask = cohort.id_mask("patient", ["P001", "P029", "P030", "P043"])[0]
    for query in ("pneumonia", 'NOT "pleural effusion"'):
        got = server.call("POST", "/api/cohort", body={
            "query": query, "level": "patient", "list_id": first["id"], "limit": 100}).json()
        assert got["counts"] == cohort.counts(query, cohort.scope(within=mask))
        assert {m["ids"][0] for m in got["members"]} <= {"P001", "P029", "P030", "P043"}
    everyone = cohort.counts('NOT "pleural effusion"')
    assert got["counts"]["patient"] < everyone["patient"]  # NOT stays within the list
    parts = server.call("GET", "/api/lists/compare",
                        params={"a": first["id"], "b": second["id"]}).json()
    assert (parts["both"], parts["only_a"], parts["only_b"]) == (
        ["P030", "P043"], ["P001", "P029", "NOPE"], ["P050"])
    reports = upload(server, "reports", ["P043-R1"], kind="report")
    mixed = server.call("GET", "/api/lists/compare", params={"a": first["id"],
                                                              "b": reports["id"]})
    assert mixed.status == 400 and "one kind" in mixed.json()["detail"]
    by_report = server.call("POST", "/api/cohort", body={
        "query": '"pleural effusion"', "list_id": reports["id"]}).json()["counts"]
    assert by_report == {"patient": 1, "visit": 1, "report": 1}


def test_id_lists_refuse_bad_files_and_counts_only_roles(server: Server) -> None:
    empty = server.call("POST", "/api/lists", body={"name": "e", "csv": "patient_id\n\n"})
    assert empty.status == 400
    assert empty.json()["detail"] == "list 'e', line 1: no ids in the first column"
    assert server.call("POST", "/api/lists", role="viewer",
                       body={"name": "v", "csv": "P001"}).status == 403
    mine = upload(server, "for the viewer", ["P001"])
    assert server.call("POST", "/api/cohort", role="viewer", body={
        "query": "pneumonia", "list_id": mine["id"]}).status == 403
    assert server.call("GET", "/api/lists/999999").status == 404


def test_saved_cohort_rerun_shows_what_changed(server: Server) -> None:
    put_bundle(server, "growing", ["pneumonia"])
    state = {"query": 'bundle:"growing"', "level": "patient"}
    saved = server.call("POST", "/api/saved", body={"name": "grows", "state": state}).json()
    cohort = Cohort(server.index)
    before = cohort.counts("pneumonia")
    assert saved["counts"] == before and saved["patients"] == before["patient"]
    same = server.call("POST", f"/api/saved/{saved['id']}/rerun").json()
    assert same["counts_now"] == same["counts_then"] and same["added"] == same["removed"] == 0
    put_bundle(server, "growing", ["pneumonia", "pleural effusion"])  # the bundle widens
    grown = server.call("POST", f"/api/saved/{saved['id']}/rerun").json()
    after = cohort.counts("pneumonia OR \"pleural effusion\"")
    assert grown["counts_now"] == after and grown["counts_then"] == before
    expected_added = sorted(
        {m.ids[0] for m in cohort.members('pneumonia OR "pleural effusion"', "patient")}
        - {m.ids[0] for m in cohort.members("pneumonia", "patient")})
    assert grown["added"] == len(expected_added) > 0 and grown["removed"] == 0
    assert grown["added_ids"] == expected_added[:50]
    names = [s["name"] for s in server.call("GET", "/api/saved").json()["saved"]]
    assert "grows" in names
    assert "grows" not in [s["name"] for s in server.call("GET", "/api/saved",
                                                          role="admin").json()["saved"]]
    assert server.call("POST", f"/api/saved/{saved['id']}/rerun", role="admin").status == 404
    server.call("POST", "/api/cohort", body=state)
    latest = server.call("GET", "/api/history").json()["history"][0]
    assert (latest["kind"], latest["state"], latest["counts"]) == ("cohort", state, after)
    assert server.call("POST", "/api/saved", body={"name": "x", "state": {}}).status == 400


def test_timeline_lists_a_patients_reports_matched_first_and_is_audited(
        server: Server) -> None:
    data = server.call("GET", "/api/patients/P043/timeline",
                       params={"query": "pleural effusion"}).json()
    cohort = Cohort(server.index)
    own = cohort.id_mask("patient", ["P043"])[0]
    matched = cohort.engine.report_mask("pleural effusion") & own
    assert len(data["reports"]) == int(own.sum())
    assert [r["matched"] for r in data["reports"]] == sorted(
        [bool(x) for x in matched[own]], reverse=True)
    first = data["reports"][0]
    assert {f["concept"] for f in first["findings"]} >= {"pleural_effusion"}
    assert all(f["pattern"].split("|")[0] != "anatomy" for r in data["reports"]
               for f in r["findings"])
    unmatched = [r["date"] for r in data["reports"] if not r["matched"]]
    assert unmatched == sorted(unmatched)
    record = json.loads(server.audit.read_text().splitlines()[-1])
    assert record["endpoint"] == "patients/timeline"
    assert record["counts"] == {"reports": 3, "patients": 1, "matched": int(matched.sum())}
    assert server.call("GET", "/api/patients/P043/timeline", role="viewer").status == 403
    assert server.call("GET", "/api/patients/NOBODY/timeline").status == 404


def test_chart_counts_are_the_cohorts(server: Server) -> None:
    cohort = Cohort(server.index)
    query = 'pneumonia OR "pleural effusion"'
    data = server.call("POST", "/api/charts/cohort", body={"query": query}).json()
    breakdown = cohort.breakdown(query)
    assert (data["year"], data["month"], data["type"], data["section"]) == (
        breakdown.year, breakdown.month, breakdown.type, breakdown.section)
    assert sum(data["year"].values()) == sum(data["type"].values()) == data["counts"]["report"]
    assert "sentence" not in json.dumps(data)  # counts only
    mix = server.call("GET", "/api/charts/polarity",
                      params={"term": "pneumothorax"}).json()["reports"]
    assert mix == cohort.polarity_mix("pneumothorax")
    assert mix["absent"] == cohort.counts("no pneumothorax")["report"]
    assert mix["present"] == cohort.counts("pneumothorax")["report"]


def test_audit_viewer_is_for_admins_and_verifies_the_chain(server: Server) -> None:
    assert server.call("GET", "/api/audit", role="researcher").status == 403
    server.call("GET", "/api/search", params={"q": "pneumonia"})
    today = datetime.now(UTC).date().isoformat()
    got = server.call("GET", "/api/audit", role="admin", params={
        "user": "researcher1", "endpoint": "search", "date_from": today, "limit": 5}).json()
    assert got["records"] and all(r["user"] == "researcher1" and r["endpoint"] == "search"
                                  for r in got["records"])
    seqs = [r["seq"] for r in got["records"]]
    assert seqs == sorted(seqs, reverse=True)
    none = server.call("GET", "/api/audit", role="admin", params={"date_to": "2000-01-01"})
    assert none.json()["total"] == 0
    assert server.call("GET", "/api/audit/verify", role="admin").json()["ok"] is True


def test_workbench_file_is_private_and_holds_no_report_text(server: Server) -> None:
    put_bundle(server, "stored", ["pneumonia"])
    server.call("POST", "/api/saved", body={"name": "kept", "state": {"query": "pneumonia"}})
    path = server.audit.parent / WORKBENCH_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    cohort = Cohort(server.index)
    stored = path.read_bytes()
    for member in cohort.members("pneumonia", "patient")[:5]:
        assert member.sentence.encode() not in stored


def test_search_counts_what_asserts_the_query_and_pages_through_all_of_it(
        server: Server) -> None:
    cohort = Cohort(server.index)
    query = "no pneumothorax or no consolidation or no pleural effusion"
    reading = '"no pneumothorax" OR "no consolidation" OR "no pleural effusion"'
    sentences = {m.ids[-1] for m in cohort.members(reading, "sentence")}
    assert len(sentences) > 200  # more than the ranked depth of other searches
    pages, offset = [], 0
    while True:
        page = server.call("GET", "/api/search", params={
            "q": query, "level": "sentence", "top": 100, "offset": offset, "exact": 1}).json()
        assert page["asserting"] == dict(cohort.counts(reading)) | {"sentence": len(sentences)}
        pages.extend(h["id"] for h in page["hits"])
        offset += 100
        if offset >= len(sentences):
            break
    assert sentences <= set(pages)  # every asserting sentence is reached by paging
    report = server.call("GET", "/api/search", params={"q": "pneumothorax", "top": 5,
                                                       "exact": 1}).json()
    assert report["asserting"]["report"] == cohort.counts("pneumothorax")["report"]
    dated = server.call("GET", "/api/search", params={
        "q": "pneumothorax", "date_from": "2021-01-01", "type": "cxr pa/lateral",
        "exact": 1}).json()
    assert dated["asserting"]["report"] == cohort.counts(
        '("pneumothorax") date:2021-01-01.. type:"cxr pa/lateral"')["report"]
    unknown = server.call("GET", "/api/search", params={"q": "zebra stripes",
                                                        "exact": 1}).json()
    assert unknown["asserting"] is None  # not findings of the lexicon: no exact count
    plain = server.call("GET", "/api/search", params={"q": "pneumothorax"}).json()
    assert plain["asserting"] is None  # asked for only: plain searches cost what they did


def test_search_marks_hits_against_the_query_and_explains_hybrid(server: Server) -> None:
    data = server.call("GET", "/api/search", params={
        "q": "pneumothorax", "method": "hybrid", "top": 50}).json()
    against = [h for h in data["hits"] if h["against_query"]]
    assert against  # BM25 finds "No pneumothorax." for "pneumothorax"
    for hit in against:
        assert hit["against_query"] == ["absent"]
        assert {f["polarity"] for f in hit["findings"] if f["concept"] == "pneumothorax"} == {
            "absent"}
    for hit in data["hits"]:
        why = hit["explanation"]
        assert set(why["found_by"]) == set(why["ranks"]) and why["summary"]
        if "concept" in why["found_by"]:
            assert "polarity" in why["found_by"]["concept"]
        if "bm25" in why["found_by"]:
            assert why["found_by"]["bm25"].startswith("terms ")
    agreeing = [h for h in data["hits"] if not h["against_query"]]
    assert all("pneumothorax" not in {f["concept"] for f in h["findings"]
                                      if f["polarity"] == "absent"} or h["against_query"] == []
               for h in agreeing)


def test_search_reads_bundles(server: Server) -> None:
    put_bundle(server, "air leak", ["pneumothorax", "pneumomediastinum"])
    data = server.call("GET", "/api/search", params={"q": 'bundle:"air leak"',
                                                     "exact": 1}).json()
    assert data["searched"] == "pneumothorax or pneumomediastinum"
    cohort = Cohort(server.index)
    assert data["asserting"]["report"] == cohort.counts(
        '"pneumothorax" OR "pneumomediastinum"')["report"]
    missing = server.call("GET", "/api/search", params={"q": 'bundle:"nope"'})
    assert missing.status == 400 and "unknown bundle" in missing.json()["detail"]


def test_saved_search_follows_what_asserts_it(server: Server) -> None:
    state = {"q": "pleural effusion", "method": "concept", "level": "report",
             "polarity": "query", "date_from": "2021-01-01"}
    saved = server.call("POST", "/api/saved", body={
        "name": "effusions since 2021", "kind": "search", "state": state}).json()
    cohort = Cohort(server.index)
    expected = cohort.counts('("pleural effusion") date:2021-01-01..')
    assert saved["kind"] == "search" and saved["counts"] == expected
    rerun = server.call("POST", f"/api/saved/{saved['id']}/rerun").json()
    assert rerun["counts_now"] == expected and rerun["added"] == rerun["removed"] == 0
    vague = server.call("POST", "/api/saved", body={
        "name": "v", "kind": "search", "state": {"q": "zebra stripes"}})
    assert vague.status == 400 and "field 'state.q'" in vague.json()["detail"]


def shown_as_viewer(shown: int | None, exact: int, threshold: int) -> bool:
    """Whether ``shown`` is ``exact`` as the viewer may see it: offset by under half a
    rounding step, then withheld below the threshold or rounded."""
    if shown is None:
        return exact < threshold + ROUND_TO / 2
    return shown % ROUND_TO == 0 and abs(shown - exact) < ROUND_TO and shown >= threshold


def test_viewers_get_counts_but_no_ids(server: Server) -> None:
    put_bundle(server, "viewer terms", ["pneumothorax"], role="viewer")
    got = server.call("POST", "/api/cohort", role="viewer",
                      body={"query": 'bundle:"viewer terms"'}).json()
    threshold = got["count_threshold"]
    cohort = Cohort(server.index)
    as_viewer = got["counts"]  # small counts withheld, others offset and rounded
    for unit, n in cohort.counts("pneumothorax").items():
        assert shown_as_viewer(as_viewer[unit], n, threshold)
    assert got["members"] == []
    search = server.call("GET", "/api/search", role="viewer",
                         params={"q": "pneumothorax", "exact": 1}).json()
    assert search["hits"] == [] and search["asserting"]["report"] == as_viewer["report"]
    saved = server.call("POST", "/api/saved", role="viewer", body={
        "name": "counts", "state": {"query": "pneumothorax"}}).json()
    assert saved["patients"] == 0 and saved["counts"] == as_viewer  # no ids kept
    years = server.call("POST", "/api/charts/cohort", role="viewer",
                        body={"query": "pneumothorax"}).json()["year"]
    exact = cohort.breakdown("pneumothorax").year
    assert years.keys() == exact.keys()
    assert all(shown_as_viewer(years[y], n, threshold) for y, n in exact.items())
    assert server.call("GET", "/api/lists", role="viewer").status == 403


def test_context_means_what_the_cli_means(server: Server) -> None:
    from clinsearch import Index

    from .conftest import clinsearch

    index = Index.open(server.index)
    for context in ("historical", "any"):
        expected = [h.id for h in index.search("pneumonia", "report", 50,
                                               f"concept:context={context}")]
        got = server.call("GET", "/api/search", params={
            "q": "pneumonia", "context": context, "top": 50, "exact": 1}).json()
        assert [h["id"] for h in got["hits"]] == expected  # findings in it also count
        assert got["asserting"] is None  # no longer the cohort's reading
    plain = server.call("GET", "/api/search", params={"q": "pneumonia", "top": 50}).json()
    assert len(plain["hits"]) <= len(got["hits"])
    cli = clinsearch("search", str(server.index), "pneumonia", "--method", "bm25",
                     "--context", "historical", check=False)
    answer = server.call("GET", "/api/search", params={
        "q": "pneumonia", "method": "bm25", "context": "historical"})
    assert answer.status == 400 and cli.stderr.strip() == f"error: {answer.json()['detail']}"
