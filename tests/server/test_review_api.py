"""Chart review over HTTP against a real ``clinsearch serve``: a saved cohort's sample drawn
once, judged blind by two reviewers, its figures equal to ``clinsearch review show`` on the same
store and to the Python API's, disagreements settled by the owner, rejected members with their
evidence, the export's header, a rerun's changes, and the audit of every step."""

from __future__ import annotations

import csv
import io
import json

from clinsearch import Index
from clinsearch.evaluate.chart_review import Item, Judgment, review_figures
from clinsearch.search.cohort import Cohort
from clinsearch.server.workbench_store import WORKBENCH_FILE

from .conftest import Server, clinsearch

QUERY = "pneumonia"


def start(server: Server, **options: object) -> dict:
    saved = server.call("POST", "/api/saved", body={
        "name": "review me", "kind": "cohort", "state": {"query": QUERY, "level": "patient"}})
    assert saved.status == 200, saved.text
    answer = server.call("POST", "/api/reviews", body={"saved_id": saved.json()["id"]} | options)
    assert answer.status == 200, answer.text
    return answer.json()


def records(server: Server) -> list[dict]:
    return [json.loads(line) for line in server.audit.read_text().splitlines()]


def test_two_blind_reviewers_give_the_figures_the_cli_and_python_api_give(
        server: Server) -> None:
    review = start(server, size=10, seed=3, second_reviewer=True, reviewers=["admin1"],
                   nonmembers=4)
    rid = review["id"]
    members = {m.report_id for m in Cohort(server.index).members(QUERY, "report")}
    sample = [i["report_id"] for i in review["items"]]
    assert len(sample) == 14 and len(set(sample) & members) == 10
    assert all(set(i) == {"report_id", "verdict", "note"} for i in review["items"])  # blind
    assert review["figures"]["members"] == len(members) == review["counts"]["report"]
    # the sample is fixed: asking again shows the same reports in the same order
    again = server.call("GET", f"/api/reviews/{rid}").json()
    assert [i["report_id"] for i in again["items"]] == sample

    # the blind view: text with the finding marked, nothing of the engine's reading
    shown = server.call("GET", f"/api/reviews/{rid}/reports/{sample[0]}").json()
    assert set(shown) == {"report_id", "date", "type", "text", "sections", "highlights",
                          "review_id", "verdict", "note", "generation"}
    view = Index.open(server.index).report(sample[0])
    spans = sorted({(f.finding.start, f.finding.end) for f in view.findings
                    if f.finding.name == QUERY})  # every mention of it, in any polarity
    assert spans and [(h["start"], h["end"]) for h in shown["highlights"]] == spans

    first = {uid: ("does_not_meet" if n % 4 == 0 else "meets") for n, uid in enumerate(sample)}
    second = {uid: ("does_not_meet" if n % 3 == 0 else "meets") for n, uid in enumerate(sample)}
    for uid in sample:
        assert server.call("PUT", f"/api/reviews/{rid}/judgments/{uid}",
                           body={"verdict": first[uid], "note": "hedge"}).status == 200
    # the second reviewer sees none of the first one's verdicts
    theirs = server.call("GET", f"/api/reviews/{rid}", role="admin").json()
    assert all(i["verdict"] is None for i in theirs["items"])
    for uid in sample:
        answer = server.call("PUT", f"/api/reviews/{rid}/judgments/{uid}", role="admin",
                             body={"verdict": second[uid]})
        assert answer.status == 200, answer.text

    figures = server.call("GET", f"/api/reviews/{rid}").json()["figures"]
    items = [Item(uid, "member" if uid in members else "nonmember") for uid in sample]
    judged = [Judgment(uid, "researcher1", v) for uid, v in first.items()] + [
        Judgment(uid, "admin1", v) for uid, v in second.items()]
    expected = review_figures(items, judged, {}, len(members), figures["nonmember_pool"], 2)
    assert figures["precision"] == expected.precision and expected.precision is not None
    assert figures["kappa"] == expected.kappa and expected.kappa is not None
    assert figures["disputed"] == sum(first[u] != second[u] for u in sample if u in members)
    store = server.audit.parent / WORKBENCH_FILE
    cli = json.loads(clinsearch("review", "show", str(rid), "--json",
                                "--workbench", str(store)).stdout)
    assert cli == figures

    # the owner settles the disagreements; the second reviewer may not
    disputed = server.call("GET", f"/api/reviews/{rid}/disagreements").json()["disagreements"]
    assert {d["report_id"] for d in disputed} == {u for u in sample if first[u] != second[u]}
    assert disputed[0]["verdicts"] == {"admin1": second[disputed[0]["report_id"]],
                                       "researcher1": first[disputed[0]["report_id"]]}
    assert server.call("GET", f"/api/reviews/{rid}/disagreements", role="admin").status == 403
    for d in disputed:
        settled = server.call("PUT", f"/api/reviews/{rid}/adjudications/{d['report_id']}",
                              body={"verdict": "does_not_meet", "note": "negated"})
        assert settled.status == 200
    figures = server.call("GET", f"/api/reviews/{rid}").json()["figures"]
    assert figures["disputed"] == 0 and figures["pending"] == 0

    # rejected members: evidence sentence, matched finding and trigger; CSV without text
    rejected = server.call("GET", f"/api/reviews/{rid}/rejected").json()["rejected"]
    assert {r["report_id"] for r in rejected} == {
        u for u in sample if u in members and "does_not_meet" in (first[u], second[u])}
    assert all(r["sentence"] and "pneumonia" in r["matched"] for r in rejected)
    table = server.call("GET", f"/api/reviews/{rid}/rejected", params={"format": "csv"}).text
    rows = list(csv.reader(io.StringIO(table)))
    assert rows[0] == ["report_id", "evidence_sentence_id", "matched", "trigger", "reason"]
    assert sorted(r[0] for r in rows[1:]) == sorted(r["report_id"] for r in rejected)
    assert all(r["sentence"] not in table for r in rejected)

    # the export carries the review: definition, generation, date and the figures
    export = server.call("GET", f"/api/reviews/{rid}/export")
    header = [line for line in export.text.splitlines() if line.startswith("# ")]
    assert f"# cohort definition: {QUERY}; level patient" in header
    assert any(line.startswith(f"# index generation: drawn on {review['generation']}")
               for line in header)
    assert f"# precision: {figures['precision']:.3f}" in header[5]
    assert any(line.startswith("# kappa: ") for line in header)
    body = list(csv.reader(io.StringIO("\n".join(
        line for line in export.text.splitlines() if not line.startswith("# ")))))
    assert len(body) - 1 == Cohort(server.index).counts(QUERY)["patient"]

    rerun = server.call("POST", f"/api/reviews/{rid}/rerun").json()
    assert rerun["members_now"] == rerun["members_then"] == len(members)
    assert rerun["entered"] == rerun["left"] == []

    steps = [r for r in records(server) if r["endpoint"].startswith("review")]
    names = {r["endpoint"] for r in steps}
    assert {"review/start", "review", "review/report", "review/judge", "review/disagreements",
            "review/adjudicate", "review/rejected", "review/export", "review/rerun"} <= names
    read = next(r for r in steps if r["endpoint"] == "review/report")
    assert read["disclosed"]["reports"]["ids"] == [sample[0]]
    assert all(r["purpose"] for r in steps)


def test_a_stratified_review_of_all_members_and_the_cli_start(server: Server,
                                                              tmp_path: object) -> None:
    review = start(server, size=None, strata="year")
    members = Cohort(server.index).members(QUERY, "report")
    assert len(review["items"]) == len(members)
    store = tmp_path / "store.sqlite"  # type: ignore[operator]
    out = clinsearch("review", "start", str(server.index), QUERY, "--owner", "me", "--size",
                     "6", "--strata", "section", "--workbench", str(store)).stdout
    assert out.startswith("review 1: ") and len(out.strip().splitlines()) == 7
    bad = clinsearch("review", "start", str(server.index), QUERY, "--owner", "me",
                     "--strata", "ward", "--workbench", str(store), check=False)
    assert bad.returncode == 2 and "--strata" in bad.stderr


def test_the_cli_reviews_a_saved_cohort_in_the_servers_store(server: Server) -> None:
    listed = server.call("POST", "/api/lists", body={
        "name": "some", "kind": "patient", "csv": "id\nP036\nP037\nP038\nP039\nP040\nP041"})
    state = {"query": QUERY, "level": "patient", "list": str(listed.json()["id"])}
    saved = server.call("POST", "/api/saved", body={"name": "listed", "state": state}).json()
    store = server.audit.parent / WORKBENCH_FILE
    out = clinsearch("review", "start", str(server.index), "--saved", str(saved["id"]),
                     "--owner", "researcher1", "--size", "3", "--workbench", str(store)).stdout
    review_id = int(out.split()[1].rstrip(":"))
    drawn = out.strip().splitlines()[1:]
    cohort = Cohort(server.index)
    mask, _ = cohort.id_mask("patient", ["P036", "P037", "P038", "P039", "P040", "P041"])
    within = {m.report_id for m in cohort.members(QUERY, "report", cohort.scope({}, mask))}
    assert len(drawn) == 3 and set(drawn) <= within  # the saved cohort's list holds
    # the running server sees the review at once, and its writes stay visible to the CLI
    shown = server.call("GET", f"/api/reviews/{review_id}").json()
    assert sorted(i["report_id"] for i in shown["items"]) == sorted(drawn)
    assert shown["figures"]["members"] == len(within) and shown["name"] == "listed"
    assert server.call("PUT", f"/api/reviews/{review_id}/judgments/{drawn[0]}",
                       body={"verdict": "meets"}).status == 200
    figures = json.loads(clinsearch("review", "show", str(review_id), "--json",
                                    "--workbench", str(store)).stdout)
    assert figures["meets"] == 1
    rerun = clinsearch("review", "rerun", str(review_id), str(server.index), "--workbench",
                       str(store)).stdout
    assert f"members then {len(within)}, now {len(within)}" in rerun
    assert server.call("GET", f"/api/reviews/{review_id}", role="admin").status == 404


def test_an_open_review_shows_the_engines_reading(server: Server) -> None:
    review = start(server, size=3, nonmembers=2, blind=False)
    members = {m.report_id: m for m in Cohort(server.index).members(QUERY, "report")}
    kinds = {i["report_id"]: i["kind"] for i in review["items"]}
    assert {uid for uid, kind in kinds.items() if kind == "member"} <= set(members)
    assert sorted(kinds.values()) == ["member"] * 3 + ["nonmember"] * 2
    uid = next(uid for uid, kind in kinds.items() if kind == "member")
    shown = server.call("GET", f"/api/reviews/{review['id']}/reports/{uid}").json()
    assert shown["kind"] == "member"
    assert shown["evidence_sentence_id"] == members[uid].sentence_id
