"""Cohorts over HTTP stay strict and say what each wider search tier would add (issue 36,
item 3): the same numbers as ``clinsearch cohort --json``, a field that counts a tier too, the
export and the audit saying which tiers were counted, and a viewer's numbers keyed by the
units each counts."""

from __future__ import annotations

import json
from pathlib import Path

from clinsearch.search.cohort import Cohort
from clinsearch.search.tiers import wider_tiers
from clinsearch.server.audit_key import default_key_path, load_key
from clinsearch.server.small_counts import noise_key, viewer_counts

from .conftest import Server, clinsearch

INDICATION = "stated only as the reason for the exam"


def _cli(server: Server, *extra: str) -> dict:
    return json.loads(clinsearch("cohort", str(server.index), "pneumonia", "--level", "report",
                                 "--json", *extra).stdout)


def test_cohort_answers_what_wider_tiers_add_as_the_cli(server: Server) -> None:
    strict = server.call("POST", "/api/cohort", body={"query": "pneumonia", "level": "report"})
    assert strict.status == 200, strict.text
    data, cli = strict.json(), _cli(server)
    assert data["counts"] == Cohort(server.index).counts("pneumonia")  # strict, as before
    assert data["counts"] == cli["counts"] and data["counts"]["report"] == 24
    assert data["counted_tiers"] == ["stated", "partial"] == cli["counted_tiers"]
    assert data["wider_tiers"] == cli["wider_tiers"]
    indication = {t["tier"]: t for t in data["wider_tiers"]}["indication"]
    assert indication["label"] == INDICATION and indication["adds"]["report"] == 4

    wide = server.call("POST", "/api/cohort", body={
        "query": "pneumonia", "level": "report", "context": "indication"}).json()
    assert wide["counts"]["report"] == 24 + 4 == wide["total"]
    assert wide["counted_tiers"] == ["stated", "partial", "indication"]
    assert wide["counts"] == _cli(server, "--context", "indication")["counts"]
    assert [t["tier"] for t in wide["wider_tiers"]] == ["hedged"]
    chart = server.call("POST", "/api/charts/cohort",
                        body={"query": "pneumonia", "context": "indication"}).json()
    assert chart["counts"] == wide["counts"]  # the page's charts count the same cohort
    hedged = server.call("POST", "/api/cohort", body={
        "query": "pneumonia", "level": "report", "include_uncertain": True}).json()
    assert hedged["counted_tiers"] == ["stated", "partial", "hedged"]
    assert hedged["counts"]["report"] == 24 + {
        t["tier"]: t for t in data["wider_tiers"]}["hedged"]["adds"]["report"]

    bad = server.call("POST", "/api/cohort", body={"query": "pneumonia", "context": "cousin"})
    assert bad.status == 400 and "unknown context 'cousin'" in bad.json()["detail"]


def test_export_and_audit_say_the_tiers_counted(server: Server, tmp_path: Path) -> None:
    export = server.call("GET", "/api/cohort/export", params={
        "query": "pneumonia", "level": "report", "context": "indication"})
    assert export.status == 200, export.text
    lines = export.text.splitlines()
    assert lines[:2] == ["# cohort definition: pneumonia; level report",
                         "# tiers counted: stated, partial, indication"]
    assert len(lines) == 2 + 1 + 28  # the comment lines, the CSV header, the members
    cli = tmp_path / "cli.csv"
    clinsearch("cohort", str(server.index), "pneumonia", "--level", "report",
               "--context", "indication", "--export", str(cli))
    assert export.text.encode() == cli.read_bytes()  # one export, whoever asks
    server.call("POST", "/api/cohort", body={"query": "pneumonia", "context": "indication"})
    records = [json.loads(line) for line in server.audit.read_text().splitlines()]
    last = {r["endpoint"]: r for r in records if r.get("endpoint", "").startswith("cohort")}
    assert last["cohort"]["params"]["counted_tiers"] == ["stated", "partial", "indication"]
    assert last["cohort/export"]["params"]["counted_tiers"] == [
        "stated", "partial", "indication"]


def test_viewer_sees_wider_tiers_keyed_by_the_units_they_add(server: Server) -> None:
    answer = server.call("POST", "/api/cohort", role="viewer",
                         body={"query": "pneumonia", "level": "report"}).json()
    threshold = answer["count_threshold"]
    cohort = Cohort(server.index)
    key = noise_key(load_key(default_key_path(), create=False))
    keyed = [viewer_counts(w.added, threshold, key) for w in wider_tiers(cohort, "pneumonia")]
    expected = [adds for adds in keyed if any(n is not None for n in adds.values())]
    assert [t["adds"] for t in answer["wider_tiers"]] == expected
    raw = {t["tier"]: t["adds"] for t in _cli(server)["wider_tiers"]}
    assert raw["indication"] == {"patient": 0, "visit": 4, "report": 4}  # all below 10:
    assert "indication" not in {t["tier"] for t in answer["wider_tiers"]}  # not even "> 0"


def test_saved_cohort_its_rerun_and_review_count_the_tiers_it_names(server: Server) -> None:
    page = {"query": "pneumonia", "level": "report", "context": "indication"}
    saved = server.call("POST", "/api/saved", body={"name": "with the reason for the exam",
                                                    "kind": "cohort", "state": page})
    assert saved.status == 200, saved.text
    assert saved.json()["counts"]["report"] == 28  # 24 asserted + 4 only the reason
    rerun = server.call("POST", f"/api/saved/{saved.json()['id']}/rerun").json()
    assert rerun["counts_now"]["report"] == 28
    review = server.call("POST", "/api/reviews", body={"saved_id": saved.json()["id"]})
    assert review.status == 200, review.text
    assert review.json()["figures"]["members"] == 28  # drawn from the widened cohort
    exported = server.call("GET", f"/api/reviews/{review.json()['id']}/export").text
    assert "; context indication" in exported.splitlines()[1]  # the review's definition
