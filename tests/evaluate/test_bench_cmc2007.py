"""CMC 2007 benchmark: the shipped code query list, the builder CLI, and code-like-a-coder
scoring over a real index of small reports in the challenge's XML format."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from clinsearch import Index
from clinsearch.cli import main
from clinsearch.corpus.readers import read_reports
from clinsearch.errors import InputError
from clinsearch.evaluate.bench.cmc2007 import (
    CodeQuery,
    cmc_benchmark,
    load_code_queries,
    report_codes,
)
from clinsearch.evaluate.coding import code_cohorts, coding_scores

DOCS = {  # id -> (majority codes, history, impression); written for the tests
    "10": (["486"], "Cough.", "Right lower lobe pneumonia."),
    "11": (["786.2"], "Cough.", "No pneumonia."),
    "12": (["486", "518.0"], "Fever.", "Left lower lobe pneumonia and atelectasis."),
    "13": (["518.0"], "Cough.", "Possible pneumonia. Atelectasis."),
    "14": ([], "Fever.", "Pneumonia."),
}


def xml(docs: dict[str, tuple[list[str], str, str]]) -> str:
    parts = ["<?xml version='1.0' standalone='yes'?>", "<docs>"]
    for doc_id, (codes, history, impression) in docs.items():
        parts += [f'<doc id="{doc_id}" type="RADIOLOGY_REPORT"><codes>',
                  *(f'<code origin="CMC_MAJORITY" type="ICD-9-CM">{c}</code>' for c in codes),
                  "</codes><texts>",
                  f'<text origin="CCHMC_RADIOLOGY" type="CLINICAL_HISTORY">{history}</text>',
                  f'<text origin="CCHMC_RADIOLOGY" type="IMPRESSION">{impression}</text>',
                  "</texts></doc>"]
    return "\n".join([*parts, "</docs>", ""])


@pytest.fixture
def reports_xml(tmp_path: Path) -> Path:
    path = tmp_path / "reports.xml"
    path.write_text(xml(DOCS), encoding="utf-8")
    return path


def test_shipped_query_list() -> None:
    queries = load_code_queries()
    assert len(queries) == 31 and len({q.code for q in queries}) == 31
    assert sum(q.group == "renal" for q in queries) == 14
    by_code = {q.code: q for q in queries}
    assert by_code["599.0"].query == "urinary tract infection"
    assert by_code["593.89"].index_term == "Pyelectasis"
    # every code declares what a coder counts: the reason for exam; symptoms and chronic
    # conditions also "history of"; personal history codes only the mentions read as history
    assert all(q.context for q in queries)
    assert by_code["599.0"].context == ("indication",)
    assert by_code["786.2"].context == ("historical", "indication")
    assert by_code["593.70"].context == ("historical", "indication")
    assert by_code["741.90"].context == ("historical", "indication")
    assert by_code["V13.02"].cohort_query == 'context:historical "urinary tract infection"'


def test_query_list_context_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "q.yaml"
    head = 'format: 1\ncodes:\n  "486":\n    title: Pneumonia\n    query: pneumonia\n'
    path.write_text(head + "    group: other\n    context: [indication, historical]\n")
    assert load_code_queries(path)[0].context == ("historical", "indication")
    path.write_text(head + "    group: other\n    context: indication\n")
    assert load_code_queries(path)[0].context == ("indication",)
    path.write_text(head + "    group: other\n    context: [indication, reason]\n")
    with pytest.raises(InputError, match=r"q\.yaml:7: field 'context': unknown context 'reason'"
                                         r" \(expected family, historical, hypothetical,"
                                         r" indication\)"):
        load_code_queries(path)
    path.write_text(head + "    group: other\n    context: {indication: 1}\n")
    with pytest.raises(InputError, match=r"q\.yaml:7: field 'context'"):
        load_code_queries(path)


def test_query_list_errors_name_line(tmp_path: Path) -> None:
    bad = tmp_path / "q.yaml"
    bad.write_text('format: 1\ncodes:\n  "486":\n    title: Pneumonia\n    query: pneumonia\n'
                   "    group: lungs\n")
    with pytest.raises(InputError, match=r"q\.yaml:6: field 'group': expected one of renal"):
        load_code_queries(bad)
    bad.write_text('format: 1\ncodes:\n  "486":\n    title: Pneumonia\n    group: other\n')
    with pytest.raises(InputError, match=r"q\.yaml:4: field 'query': missing"):
        load_code_queries(bad)


def test_benchmark_judges_coded_reports_only(reports_xml: Path) -> None:
    gold = report_codes(read_reports(reports_xml, "cmc2007"))
    assert set(gold) == {"10", "11", "12", "13"}
    queries = [CodeQuery("486", "Pneumonia", "pneumonia", "other"),
               CodeQuery("786.2", "Cough", "cough", "other")]
    bench = cmc_benchmark(gold, queries, min_relevant=2)
    assert [q.qid for q in bench.queries] == ["486"]  # cough has one coded report
    assert bench.qrels.grades["486"] == {"10": 1, "11": 0, "12": 1, "13": 0}


def test_cli_builds_benchmark(reports_xml: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    out = tmp_path / "bench"
    monkeypatch.setattr(sys, "argv", ["clinsearch", "bench", "build", "cmc2007", "--out",
                                      str(out), str(reports_xml)])
    with pytest.raises(SystemExit) as exit_:
        main()
    assert exit_.value.code == 0
    assert "2 queries (2 other)" in capsys.readouterr().out  # 486 and 518.0 have two reports
    assert (out / "queries.tsv").read_text().splitlines()[1:] == [
        "486\tpneumonia\tother", "518.0\tatelectasis\tother"]


def test_coding_scores_cohorts_against_codes(reports_xml: Path, tmp_path: Path) -> None:
    index = Index.build(read_reports(reports_xml, "cmc2007"), tmp_path / "index", progress=False)
    gold = report_codes(read_reports(reports_xml, "cmc2007"))
    queries = [CodeQuery("486", "Pneumonia", "pneumonia", "other"),
               CodeQuery("518.0", "Pulmonary collapse", "atelectasis", "other"),
               CodeQuery("786.2", "Cough", "cough", "other", cohort="pneumonia AND (")]
    cohorts = code_cohorts(index, queries, context=())
    # present pneumonia only: 13 is uncertain, 11 negated; 14 is uncoded and not judged
    assert cohorts[0].reports == {"10", "12", "14"}
    assert cohorts[1].reports == {"12", "13"}
    assert cohorts[2].refused and not cohorts[2].reports
    scores = coding_scores(gold, cohorts)
    pneumonia, cough = scores.concept("486"), scores.concept("786.2")
    assert (pneumonia.tp, pneumonia.fp, pneumonia.fn) == (2, 0, 0)
    assert (cough.tp, cough.fn) == (0, 1)
    total = scores.micro
    assert (total.tp, total.fp, total.fn) == (4, 0, 1)
    assert total.f1 == pytest.approx(8 / 9)


CODED = {  # id -> (majority codes, history, impression), as a coder codes a radiology report
    "20": (["786.2"], "Cough.", "Normal chest."),
    "21": (["486"], "Cough.", "Right lower lobe pneumonia."),
    "22": (["780.6"], "Fever, evaluate for pneumonia.", "No pneumonia."),
    "23": (["V13.02"], "History of urinary tract infection.", "Normal kidneys."),
    "24": (["599.0"], "Urinary tract infection.", "Normal kidneys."),
    "25": (["786.2"], "History of cough.", "Normal chest."),
}


def test_declared_contexts_code_the_reason_for_exam(tmp_path: Path) -> None:
    path = tmp_path / "coded.xml"
    path.write_text(xml(CODED), encoding="utf-8")
    index = Index.build(read_reports(path, "cmc2007"), tmp_path / "index", progress=False)
    by_code = {q.code: q for q in load_code_queries()}
    queries = [by_code[c] for c in ("786.2", "486", "780.6", "V13.02", "599.0")]
    declared = {c.code: c.reports for c in code_cohorts(index, queries)}
    # a symptom: "history of cough" is the cough; not coded beside the pneumonia it is part of
    assert declared["786.2"] == {"20", "25"}
    assert declared["486"] == {"21"}  # "evaluate for pneumonia" is not coded as pneumonia
    assert declared["780.6"] == {"22"}
    assert declared["V13.02"] == {"23"}  # personal history, not the current infection
    assert declared["599.0"] == {"24"}
    own = {c.code: c.reports for c in code_cohorts(index, queries, context=())}
    assert own["786.2"] == own["780.6"] == own["599.0"] == set()  # the history is not a finding
    assert own["486"] == {"21"}
