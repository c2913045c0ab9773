"""Attacks on the chart review routes over HTTP: another user's review, a viewer reviewing,
reports outside the sample, and injected notes (HTML and script, huge, NUL and bidirectional
controls): refused, or kept as data that no answer serves as HTML."""

from __future__ import annotations

import pytest

from clinsearch.search.cohort import Cohort
from clinsearch.server.state import VIEWER_MIN_COUNT

from .conftest import Server
from .test_attacks import raw


@pytest.fixture(scope="module")
def review(server: Server) -> dict:
    saved = server.call("POST", "/api/saved", body={
        "name": "attacked", "kind": "cohort", "state": {"query": "cardiomegaly"}}).json()
    answer = server.call("POST", "/api/reviews", body={"saved_id": saved["id"], "size": 5,
                                                       "reviewers": ["viewer1"]})
    assert answer.status == 200, answer.text
    return answer.json()


def test_another_users_review_is_not_found(server: Server, review: dict) -> None:
    rid, uid = review["id"], review["items"][0]["report_id"]
    for method, path, body in [
            ("GET", f"/api/reviews/{rid}", None),
            ("GET", f"/api/reviews/{rid}/reports/{uid}", None),
            ("PUT", f"/api/reviews/{rid}/judgments/{uid}", {"verdict": "meets"}),
            ("GET", f"/api/reviews/{rid}/disagreements", None),
            ("PUT", f"/api/reviews/{rid}/adjudications/{uid}", {"verdict": "meets"}),
            ("GET", f"/api/reviews/{rid}/rejected", None),
            ("GET", f"/api/reviews/{rid}/export", None),
            ("POST", f"/api/reviews/{rid}/rerun", None)]:
        answer = server.call(method, path, role="admin", body=body)  # admin1 is not listed
        assert answer.status == 404, (path, answer.status)
        assert uid not in answer.text
    assert rid not in [r["id"] for r in server.call("GET", "/api/reviews",
                                                    role="admin").json()["reviews"]]
    # nor may anyone start a review of another user's saved cohort
    theirs = server.call("POST", "/api/reviews", role="admin", body={"saved_id": 1})
    assert theirs.status == 404
    assert server.call("GET", "/api/reviews/999999").status == 404


def test_a_viewer_sees_figures_only_and_may_not_review(server: Server, review: dict) -> None:
    rid, uid = review["id"], review["items"][0]["report_id"]
    shown = server.call("GET", f"/api/reviews/{rid}", role="viewer")
    assert shown.status == 200 and "figures" in shown.json()
    assert "items" not in shown.json() and uid not in shown.text
    exact = Cohort(server.index).counts("cardiomegaly")
    def as_viewer_sees(value: int | None, count: int) -> bool:  # as every count it sees
        return (value is None and count < VIEWER_MIN_COUNT + 5) or (
            value is not None and value % 5 == 0 and abs(value - count) < 5)

    counts = shown.json()["counts"]
    assert counts.keys() == exact.keys()
    assert all(as_viewer_sees(counts[u], n) for u, n in exact.items()), (counts, exact)
    assert as_viewer_sees(shown.json()["figures"]["members"], exact["report"])
    for method, path, body in [
            ("GET", f"/api/reviews/{rid}/reports/{uid}", None),
            ("PUT", f"/api/reviews/{rid}/judgments/{uid}", {"verdict": "meets"}),
            ("GET", f"/api/reviews/{rid}/rejected", None),
            ("GET", f"/api/reviews/{rid}/export", None),
            ("POST", "/api/reviews", {"saved_id": 1})]:
        answer = server.call(method, path, role="viewer", body=body)
        assert answer.status == 403, (path, answer.status)


def test_only_sampled_reports_are_read_or_judged(server: Server, review: dict) -> None:
    rid = review["id"]
    sampled = {i["report_id"] for i in review["items"]}
    other = next(f"P{n:03d}-R1" for n in range(1, 99) if f"P{n:03d}-R1" not in sampled)
    assert server.call("GET", f"/api/reviews/{rid}/reports/{other}").status == 404
    assert server.call("PUT", f"/api/reviews/{rid}/judgments/{other}",
                       body={"verdict": "meets"}).status == 404
    assert server.call("PUT", f"/api/reviews/{rid}/judgments/..%2F..%2Fsaved",
                       body={"verdict": "meets"}).status == 404
    bad = server.call("PUT", f"/api/reviews/{rid}/judgments/{min(sampled)}",
                      body={"verdict": "maybe"})
    assert bad.status == 422


@pytest.mark.parametrize("note", ["a\x00b", "left\u202eright", "line\nbreak", "zero\u200bwidth",
                                  "x" * 501])
def test_notes_with_controls_or_too_long_are_refused(server: Server, review: dict,
                                                     note: str) -> None:
    rid, uid = review["id"], review["items"][1]["report_id"]
    answer = server.call("PUT", f"/api/reviews/{rid}/judgments/{uid}",
                         body={"verdict": "meets", "note": note})
    assert answer.status in (400, 422), answer.text
    assert note not in answer.text
    mine = server.call("GET", f"/api/reviews/{rid}").json()["items"]
    assert next(i for i in mine if i["report_id"] == uid)["verdict"] is None  # nothing stored


def test_a_huge_note_is_refused_before_it_is_read(server: Server, review: dict) -> None:
    rid, uid = review["id"], review["items"][1]["report_id"]
    headers = {"Content-Type": "application/json", "X-Purpose": "x",
               "Authorization": f"Bearer {server.tokens['researcher']}"}
    # 2 MiB announced, little sent: a server that read the body first would wait for the rest
    answer = raw(server, "PUT", f"/api/reviews/{rid}/judgments/{uid}", headers,
                 b'{"verdict": "meets", "note": "', send_length=2 << 20)
    assert answer.status == 413


def test_html_in_a_note_stays_data(server: Server, review: dict) -> None:
    rid, uid = review["id"], review["items"][2]["report_id"]
    note = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    stored = server.call("PUT", f"/api/reviews/{rid}/judgments/{uid}",
                         body={"verdict": "does_not_meet", "note": note})
    assert stored.status == 200 and stored.json()["note"] == note
    for answer in (server.call("GET", f"/api/reviews/{rid}"),
                   server.call("GET", f"/api/reviews/{rid}/rejected")):
        assert answer.headers["content-type"].startswith("application/json")
        assert answer.headers["x-content-type-options"] == "nosniff"
    table = server.call("GET", f"/api/reviews/{rid}/rejected", params={"format": "csv"})
    assert table.headers["content-type"].startswith("text/csv")
    assert "attachment" in table.headers["content-disposition"]
