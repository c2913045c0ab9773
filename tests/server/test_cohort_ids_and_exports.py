"""Cohort members over HTTP on a corpus with numeric ids: the page's table lists them in
natural order ("245" before "2422") while the CSV keeps ``clinsearch cohort --export``'s."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from clinsearch import Index
from clinsearch.corpus.readers import read_reports
from clinsearch.server.download_names import bundle_export_name, cohort_export_name

from .conftest import Server, clinsearch, serving

PATIENTS = ("2422", "245", "31", "1000")  # as text: 1000, 2422, 245, 31
NATURAL = ["31", "245", "1000", "2422"]


@pytest.fixture(scope="module")
def numeric_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``clinsearch serve --no-auth`` over four patients with numeric ids, each with pneumonia."""
    home = tmp_path_factory.mktemp("numeric")
    corpus = home / "reports.jsonl"
    corpus.write_text("".join(json.dumps({
        "id": f"{p}0", "patient_id": p, "visit_id": f"{p}1", "type": "CXR",
        "date": "2024-01-02", "text": "FINDINGS: Right lower lobe pneumonia."}) + "\n"
        for p in PATIENTS))
    Index.build(read_reports(corpus, "jsonl"), home / "index", progress=False)
    with serving(home / "index", home / "audit.jsonl", home / "server.log") as started:
        yield started


def test_members_page_sorts_ids_as_numbers_and_the_csv_as_the_cli(
        numeric_server: Server, tmp_path: Path) -> None:
    answer = numeric_server.call("POST", "/api/cohort", role=None,
                                 body={"query": "pneumonia", "level": "patient"})
    assert answer.status == 200, answer.text
    assert [m["ids"][0] for m in answer.json()["members"]] == NATURAL
    paged = numeric_server.call("POST", "/api/cohort", role=None, body={
        "query": "pneumonia", "level": "patient", "offset": 1, "limit": 2}).json()
    assert [m["ids"][0] for m in paged["members"]] == NATURAL[1:3]

    export = numeric_server.call("GET", "/api/cohort/export", role=None,
                                 params={"query": "pneumonia", "level": "patient"})
    assert export.status == 200, export.text
    cli = tmp_path / "cli.csv"
    clinsearch("cohort", str(numeric_server.index), "pneumonia", "--export", str(cli))
    assert export.text.encode() == cli.read_bytes()


def test_exports_are_named_after_the_query_and_level(numeric_server: Server) -> None:
    query = 'Pneumonia AND NOT "pleural effusion"'
    day = datetime.now(UTC).date()
    answer = numeric_server.call("GET", "/api/cohort/export", role=None,
                                 params={"query": query, "level": "report"})
    assert answer.status == 200, answer.text
    header = answer.headers["content-disposition"]
    name = re.fullmatch(r'attachment; filename="(cohort-pneumonia-and-not-pleural-effusion'
                        r'-reports-\d{8}\.csv)"', header)
    assert name is not None, header
    days = (day, day + timedelta(days=1))  # the test may cross midnight
    assert name[1] in {cohort_export_name(query, "report", d) for d in days}
    long = query + ' AND NOT bundle:"x/../ü"'
    assert cohort_export_name(long, "report", date(2026, 11, 26)) == (
        "cohort-pneumonia-and-not-pleural-effusion-and-n-reports-20261126.csv")
    assert cohort_export_name("ü → ?", "patient", date(2026, 11, 26)) == (
        "cohort-patients-20261126.csv")
    assert bundle_export_name("Insuffisance cardiaque é") == "bundle-insuffisance-cardiaque.json"
