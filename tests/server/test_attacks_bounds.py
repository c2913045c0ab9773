"""Issue 42 (items 1-3): one request must not bring the service down and a viewer must not
isolate a report. Each attack runs over real HTTP against a real ``clinsearch serve`` on
127.0.0.1 (its own, so that an attack that worked would not take the shared server with it)."""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import pytest

from clinsearch.limits import MAX_PHRASE_WORDS

from .conftest import Server, clinsearch, serving


@pytest.fixture(scope="module")
def target(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``clinsearch serve`` over the sample index with a viewer, a researcher and an admin."""
    home = tmp_path_factory.mktemp("bounds")
    users = home / "users.json"
    tokens = {role: clinsearch("users", "add", f"{role}2", "--role", role, "--users",
                               str(users)).stdout.strip()
              for role in ("viewer", "researcher", "admin")}
    with serving(sample_index, home / "audit.jsonl", home / "server.log", users=users,
                 tokens=tokens) as started:
        yield started


def _alive(server: Server) -> None:
    assert server.call("GET", "/api/session", role="viewer").status == 200
    counted = server.call("POST", "/api/cohort", body={"query": "pneumothorax"})
    assert counted.status == 200 and counted.json()["counts"]["report"] >= 1


@pytest.mark.parametrize("method", [
    "hybrid:depth=10000000000",  # tantivy's collector allocated 640 GB and Rust aborted
    "hybrid:depth=10001",
    "hybrid:rrf_k=1000000000000",
    "bm25:rerank_depth=10000000000",
    "concept:rerank_depth=1001",
    "hybrid:methods=" + ",".join(["bm25", "concept"] * 5),
    "concept:context=" + ",".join(["family", "historical"] * 5),
    "hybrid:depth=0",
])
def test_method_options_beyond_their_bounds_are_refused_before_work(
        target: Server, method: str) -> None:
    before = target.audit.stat().st_size
    answer = target.call("GET", "/api/search", role="viewer",
                         params={"q": "pneumonia", "method": method})
    assert answer.status == 422, answer.text
    assert "at most" in answer.text or "at least" in answer.text
    assert target.audit.stat().st_size == before  # refused before the search and its record
    _alive(target)


def test_page_options_beyond_their_bounds_are_refused(target: Server) -> None:
    for params in ({"top": 101}, {"top": 0}, {"offset": 10**12}, {"offset": -1}):
        answer = target.call("GET", "/api/search", params={"q": "pneumonia"} | params)
        assert answer.status == 422, (params, answer.text)
    for body in ({"offset": 10**12}, {"limit": 501}, {"offset": -1}):
        answer = target.call("POST", "/api/cohort", body={"query": "pneumonia"} | body)
        assert answer.status == 422, (body, answer.text)
    _alive(target)


def _words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(7))
                    for _ in range(n))


def test_long_phrases_are_refused_on_every_endpoint(target: Server) -> None:
    long = _words(MAX_PHRASE_WORDS + 16, 1)  # read as one phrase: its work grew as L cubed
    report = target.call("GET", "/api/search", params={"q": "pneumothorax"}).json()["hits"][0]
    calls = [
        ("POST", "/api/cohort", {"body": {"query": long}}),
        ("POST", "/api/cohort", {"body": {"query": f'text:"{long}"'}}),
        ("POST", "/api/charts/cohort", {"body": {"query": long}}),
        ("POST", "/api/saved", {"body": {"name": "x", "kind": "cohort",
                                         "state": {"query": f'"{long}"'}}}),
        ("GET", f"/api/patients/{report['patient_id']}/timeline", {"params": {"query": long}}),
        ("GET", "/api/search", {"params": {"q": long[:999]}}),
        ("GET", "/api/explain-query", {"params": {"q": long[:999]}}),
    ]
    for method, path, given in calls:
        answer = target.call(method, path, **given)  # type: ignore[arg-type]
        assert answer.status == 422, (path, answer.status, answer.text[:200])
        assert f"at most {MAX_PHRASE_WORDS} words" in answer.text
    # the attack: ~1,240 random words (10,000 characters) took the server to 22 GB
    huge = target.call("POST", "/api/cohort", role="viewer", body={"query": _words(1240, 2)})
    assert huge.status == 422
    _alive(target)


def test_within_the_bounds_queries_work(target: Server) -> None:
    phrase = _words(MAX_PHRASE_WORDS, 3)
    for query in (f'"{phrase}"', f'text:"{phrase}" OR pneumothorax'):
        answer = target.call("POST", "/api/cohort", body={"query": query})
        assert answer.status == 200, answer.text
    hits = target.call("GET", "/api/search", params={"q": "pneumonia",
                                                     "method": "hybrid:depth=10000"})
    assert hits.status == 200 and hits.json()["hits"]


def _day(iso: str, days: int) -> str:
    return (date.fromisoformat(iso) + timedelta(days=days)).isoformat()


def test_viewer_filters_must_be_wide_on_every_count_endpoint(target: Server) -> None:
    report = target.call("GET", "/api/search", params={"q": "pneumothorax"}).json()["hits"][0]
    day = target.call("GET", f"/api/reports/{report['report_id']}").json()["report"]["date"]
    narrow = [  # the probe, and the same day pinned by wide filters combined
        f"pneumothorax date:{day}..{day}",
        f"pneumothorax NOT date:..{_day(day, -1)} NOT date:{_day(day, 1)}..",
        f"pneumothorax date:2000-01-01..{day} date:{day}..2100-01-01",
        f"(date:2000-01-01..2100-01-01) OR (pneumothorax NOT (date:..{_day(day, -1)}"
        f" OR date:{_day(day, 1)}..))",
    ]
    for query in narrow:
        for path, body in (("/api/cohort", {"query": query}),
                           ("/api/charts/cohort", {"query": query}),
                           ("/api/saved", {"name": "probe", "kind": "cohort",
                                           "state": {"query": query}})):
            refused = target.call("POST", path, role="viewer", body=body)
            assert refused.status == 400, (path, query, refused.text)
            assert "fewer than 10 reports" in refused.text
        assert target.call("POST", "/api/cohort", body={"query": query}).status == 200
    refused = target.call("POST", "/api/saved", role="viewer", body={
        "name": "probe", "kind": "search",
        "state": {"q": "pneumothorax", "date_from": day, "date_to": day}})
    assert refused.status == 400 and "fewer than 10 reports" in refused.text


def _viewer_report_count(server: Server, query: str) -> int | None:
    answer = server.call("POST", "/api/cohort", role="viewer", body={"query": query})
    assert answer.status == 200, answer.text
    return answer.json()["counts"]["report"]


def test_viewer_counts_follow_the_set_not_the_rounding_step(target: Server) -> None:
    # Date windows counting the same number of reports, each a different set: deterministic
    # rounding showed every one the same (12 always 10, 13 always 15), which let a padding
    # of exactly 12 reveal one more report. Each set now draws its own offset.
    dates = sorted({target.call("GET", f"/api/reports/{h['report_id']}").json()["report"]
                    ["date"] for h in target.call("GET", "/api/search", params={
                        "q": "lungs", "method": "bm25", "top": 100}).json()["hits"]})
    by_count: dict[int, list[str]] = {}
    for start in dates[:60:3]:
        for days in (20, 30, 45, 60, 75, 90, 120):
            query = f"date:{start}..{_day(start, days)}"
            exact = target.call("POST", "/api/cohort", body={"query": query}).json()
            count = exact["counts"]["report"]
            if count >= 12 and count % 5 not in (0,):
                by_count.setdefault(count, []).append(query)
    shown = {count: {_viewer_report_count(target, q) for q in sorted(set(queries))[:6]}
             for count, queries in by_count.items() if len(set(queries)) > 2}
    assert shown, "no two windows with the same count"
    assert any(len(values) > 1 for values in shown.values()), shown
    for count, values in shown.items():
        assert all(v is None or (v % 5 == 0 and abs(v - count) < 5) for v in values)
    # the same set however it is asked for: no averaging by rephrasing
    same = {_viewer_report_count(target, q) for q in (
        "pneumothorax", "(pneumothorax)", "pneumothorax OR pneumothorax",
        "pneumothorax AND pneumothorax")}
    assert len(same) == 1


def _costliest_query() -> str:
    """The costliest cohort query within the bounds: phrases of the most words, OR-ed up to
    the query's length limit (each phrase's surface index built and its sentences read)."""
    from clinsearch.limits import MAX_QUERY_CHARS

    rng = random.Random(4)
    phrases: list[str] = []
    while True:
        words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(3))
                 for _ in range(MAX_PHRASE_WORDS)]
        longer = " OR ".join([*phrases, f'"{" ".join(words)}"'])
        if len(longer) > MAX_QUERY_CHARS:
            return " OR ".join(phrases)
        phrases.append(f'"{" ".join(words)}"')


def test_a_request_over_the_memory_headroom_fails_alone(sample_index: Path,
                                                        tmp_path: Path) -> None:
    with serving(sample_index, tmp_path / "audit.jsonl", tmp_path / "server.log",
                 options=("--request-memory", "30M")) as small:
        small.wait_warm(role=None)  # what the warm-up takes would count against requests
        heavy = small.call("POST", "/api/cohort", role=None,
                           body={"query": _costliest_query()})
        assert heavy.status == 503 and "out of memory" in heavy.text
        for _ in range(3):  # the server goes on serving: what the request built is freed
            answer = small.call("POST", "/api/cohort", role=None, body={"query": "pneumonia"})
            assert answer.status == 200
        assert "memory guard" in (tmp_path / "server.log").read_text()
