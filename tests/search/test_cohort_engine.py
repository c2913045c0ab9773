"""Cohort counts, ids and evidence agree with brute-force loops over a random findings table."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import pytest

from clinsearch.index.finding_match import FindingSpec
from clinsearch.search.cohort.arrays import CohortArrays
from clinsearch.search.cohort.engine import (
    EVERYWHERE,
    ID_COLUMNS,
    CohortEngine,
    write_members_csv,
)
from clinsearch.search.cohort.syntax import (
    And,
    Filter,
    Group,
    Node,
    Not,
    Or,
    Term,
    TextMatch,
    fold,
    parse,
)
from clinsearch.units import LEVELS

from .corpus_gen import Corpus, generate

SPECS = {  # term text -> spec; "no X" is absent, "possible X" uncertain, "right X" needs "right"
    "pneumonia": FindingSpec("pneumonia", ("pneumonia", "lobar_pneumonia"), ("present",)),
    "lobar pneumonia": FindingSpec("lobar pneumonia", ("lobar_pneumonia",), ("present",)),
    "effusion": FindingSpec("effusion", ("pleural_effusion",), ("present",)),
    "pleural effusion": FindingSpec("pleural effusion", ("pleural_effusion",), ("present",)),
    "no pneumothorax": FindingSpec("no pneumothorax", ("pneumothorax",), ("absent",)),
    "pneumothorax": FindingSpec("pneumothorax", ("pneumothorax",), ("present",)),
    "possible atelectasis": FindingSpec("possible atelectasis", ("atelectasis",), ("uncertain",)),
    "cardiomegaly": FindingSpec("cardiomegaly", ("cardiomegaly",), ("present", "uncertain")),
    "right pneumonia": FindingSpec(
        "right pneumonia", ("pneumonia", "lobar_pneumonia"), ("present",), ("right",)
    ),
    "bilateral lower lobe effusion": FindingSpec(
        "bilateral lower lobe effusion", ("pleural_effusion",), ("present", "uncertain"),
        ("bilateral", "lower lobe"),
    ),
}


def resolve(term: Term) -> FindingSpec:
    return SPECS[term.text.lower()]


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return generate(seed=7, patients=80)


@pytest.fixture(scope="module")
def engine(corpus: Corpus) -> CohortEngine:
    return CohortEngine(CohortArrays.from_arrow(*corpus.arrow()), lambda _query: resolve)


class Brute:
    """The cohort semantics as plain Python loops over rows (the reference for the SQL)."""

    def __init__(self, corpus: Corpus) -> None:
        reports = {r["id"]: r for r in corpus.reports}
        self.units: list[dict] = []
        with_sentences = {s["report_id"] for s in corpus.sentences}
        for s in corpus.sentences:
            r = reports[s["report_id"]]
            self.units.append(self._row(r, s["id"], s["section"], s["text"]))
        for r in corpus.reports:
            if r["id"] not in with_sentences:
                self.units.append(self._row(r, None, "", ""))
        by_sentence = {u["sentence"]: u for u in self.units if u["sentence"]}
        self.findings = [{**by_sentence[f["sentence_id"]], **f} for f in corpus.findings]

    @staticmethod
    def _row(r: dict, sid: str | None, section: str, text: str) -> dict:
        return {"sentence": sid, "report": r["id"], "visit": (r["patient_id"], r["visit_id"]),
                "patient": r["patient_id"], "section": section, "rtype": r["type"],
                "rdate": r["date"], "text": text}

    def shown(self, level: str, keys: set) -> list[tuple[str, ...]]:
        """The engine's ID_COLUMNS tuples for unit keys of ``level``, sorted."""
        out = []
        for key in keys:
            row = next(u for u in self.units if u[level] == key)
            ids = {"patient_id": row["patient"], "visit_id": row["visit"][1],
                   "report_id": row["report"], "sentence_id": row["sentence"]}
            out.append(tuple(ids[c] for c in ID_COLUMNS[level]))  # type: ignore[index]
        return sorted(out)

    @staticmethod
    def ok(row: dict, filters: list[Filter]) -> bool:
        for f in filters:
            if f.key == "type" and fold(row["rtype"]) != f.value:
                return False
            if f.key == "section" and fold(row["section"]) != f.value:
                return False
            if f.key == "date" and (
                not row["rdate"] or (f.low and row["rdate"] < f.low)
                or (f.high and row["rdate"] > f.high)
            ):
                return False
        return True

    def universe(self, unit: str, filters: list[Filter]) -> set[str]:
        return {u[unit] for u in self.units if u[unit] is not None and self.ok(u, filters)}

    def ids(self, node: Node, unit: str, filters: list[Filter]) -> set[str]:
        if isinstance(node, Term):
            spec = resolve(node)
            out = set()
            for row in self.findings:
                if (row["concept"] in spec.concepts and row["polarity"] in spec.polarities
                        and set(spec.modifiers) <= set(row["modifiers"]) and self.ok(row, filters)):
                    out.add(row[unit])
            return out
        if isinstance(node, TextMatch):
            return {u[unit] for u in self.units if u["sentence"] and u[unit] is not None
                    and node.phrase.lower() in u["text"].lower() and self.ok(u, filters)}
        if isinstance(node, Filter):
            return self.universe(unit, [*filters, node])
        if isinstance(node, Not):
            return self.universe(unit, filters) - self.ids(node.operand, unit, filters)
        if isinstance(node, Or):
            return set().union(*(self.ids(op, unit, filters) for op in node.operands))
        if isinstance(node, And):
            inner = [*filters, *(op for op in node.operands if isinstance(op, Filter))]
            result = self.universe(unit, inner)
            for op in node.operands:
                if not isinstance(op, Filter):
                    result &= self.ids(op, unit, inner)
            return result
        assert isinstance(node, Group)
        scope = node.scope or unit
        inner = self.ids(node.expr, scope, filters)
        return {u[unit] for u in self.units if u[unit] is not None and u[scope] in inner
                and self.ok(u, filters)}


QUERIES = [
    "pneumonia",
    "lobar pneumonia",
    "no pneumothorax",
    "pneumonia AND NOT \"pleural effusion\"",
    "pneumonia OR effusion",
    "NOT pneumonia",
    "NOT (pneumonia OR effusion OR cardiomegaly)",
    "possible atelectasis AND cardiomegaly",
    "right pneumonia",
    "bilateral lower lobe effusion OR no pneumothorax",
    "(pneumonia AND effusion) same sentence",
    "(pneumonia AND effusion) in same report",
    "(pneumonia AND NOT effusion) same visit",
    "(pneumonia AND effusion) same patient",
    "pneumonia AND NOT (effusion AND pneumothorax) same sentence",
    "((pneumonia OR cardiomegaly) AND NOT no pneumothorax) same report OR possible atelectasis",
    'type:"CHEST XRAY"',
    'pneumonia type:"chest xray"',
    "pneumonia AND NOT effusion section:impression",
    "pneumonia date:2020-01-01..2020-12-31",
    "NOT pneumonia date:..2019-12-31 type:\"CT CHEST\"",
    "(effusion section:findings) OR (cardiomegaly section:impression)",
    "NOT type:\"CT CHEST\"",
    'text:"port" AND NOT text:"clear"',
    'text:"heart" pneumonia',
]


@pytest.mark.parametrize("query", QUERIES)
def test_ids_match_brute_force_at_every_level(engine: CohortEngine, corpus: Corpus,
                                              query: str) -> None:
    brute = Brute(corpus)
    tree = parse(query)
    for level in LEVELS:
        expected = brute.ids(tree, level, [])
        assert engine.ids(query, level) == brute.shown(level, expected), (query, level)
        assert engine.count(query, level) == len(expected)


def test_counts_report_each_level(engine: CohortEngine, corpus: Corpus) -> None:
    counts = engine.counts("pneumonia AND NOT \"pleural effusion\"")
    assert list(counts) == ["patient", "visit", "report"]
    positive = {f["patient_id"] for f in corpus.findings
                if f["concept"] in ("pneumonia", "lobar_pneumonia") and f["polarity"] == "present"}
    effusion = {f["patient_id"] for f in corpus.findings
                if f["concept"] == "pleural_effusion" and f["polarity"] == "present"}
    assert counts["patient"] == len(positive - effusion) > 0
    assert counts["report"] == engine.count("pneumonia AND NOT \"pleural effusion\"", "report")


def _random_query(rng: random.Random, depth: int = 0) -> str:
    terms = [*SPECS, 'type:"CT CHEST"', "section:impression", "date:2020-01-01..2021-06-30",
             'text:"port"']
    if depth > 2 or rng.random() < 0.35:
        term = rng.choice(terms)
        return f'"{term}"' if " " in term and ":" not in term else term
    op = rng.choice(["AND", "OR", "AND NOT"])
    left, right = _random_query(rng, depth + 1), _random_query(rng, depth + 1)
    scope = rng.choice(["", "", " same sentence", " same report", " same visit", " same patient"])
    return f"({left} {op} {right}){scope}"


def test_random_queries_match_brute_force(engine: CohortEngine, corpus: Corpus) -> None:
    rng = random.Random(3)
    brute = Brute(corpus)
    nonempty = 0
    for _ in range(60):
        query = _random_query(rng)
        level = rng.choice(LEVELS)
        expected = brute.ids(parse(query), level, [])
        assert engine.count(query, level) == len(expected), (query, level)
        nonempty += bool(expected)
    assert nonempty > 20


def test_members_carry_a_matching_evidence_sentence(engine: CohortEngine,
                                                    corpus: Corpus) -> None:
    members = engine.members("(pneumonia AND effusion) same sentence AND NOT cardiomegaly",
                             "patient")
    assert members
    text = {s["id"]: s["text"] for s in corpus.sentences}
    found = {(f["sentence_id"], f["concept"], f["polarity"]) for f in corpus.findings}
    for m in members:
        assert m.sentence_id.startswith(m.report_id + "#")
        assert m.sentence == text[m.sentence_id]
        assert m.ids == ("P" + m.report_id[1:4],)
        # the evidence sentence holds both findings of the same-sentence group
        assert (m.sentence_id, "pleural_effusion", "present") in found
        assert any((m.sentence_id, c, "present") in found for c in ("pneumonia", "lobar_pneumonia"))


def test_a_page_of_members_is_the_members_in_that_order_with_evidence_read_for_it(
    engine: CohortEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = "pneumonia OR effusion"
    members = engine.members(query, "patient")
    order = lambda ids: tuple(reversed(ids[0]))  # noqa: E731 (any order of the ids)
    ordered = sorted(members, key=lambda m: order(m.ids))
    read = CohortArrays.shown_sentences
    asked: list[int] = []
    monkeypatch.setattr(CohortArrays, "shown_sentences", lambda self, rows: (
        asked.append(len(rows)) or read(self, rows)))
    for offset, limit in ((0, 5), (3, 4), (len(members) - 2, 10), (len(members), 5)):
        total, page = engine.member_page(query, "patient", EVERYWHERE, offset, limit, order)
        assert total == len(members) > 10
        assert page == ordered[offset : offset + limit]
        assert asked.pop() == sum(1 for m in page if m.sentence_id)  # the page's evidence alone


def test_members_of_a_pure_negation_have_no_evidence(engine: CohortEngine) -> None:
    members = engine.members("NOT pneumonia", "report")
    assert members
    assert all(m.sentence_id == "" and m.term == "" for m in members)


def test_export_is_written_atomically(engine: CohortEngine, tmp_path: Path) -> None:
    members = engine.members("pneumonia", "visit")
    out = tmp_path / "ids.csv"
    write_members_csv(members, "visit", out)
    with out.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["patient_id"], r["visit_id"]) for r in rows] == engine.ids("pneumonia", "visit")
    assert all(r["evidence_sentence"] and r["matched"] == "pneumonia" for r in rows)
    assert list(tmp_path.iterdir()) == [out]


def test_failed_export_leaves_no_file(tmp_path: Path) -> None:
    class Boom:
        def __getattr__(self, name: str) -> str:
            raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        write_members_csv([Boom()], "report", tmp_path / "ids.csv")  # type: ignore[list-item]
    assert list(tmp_path.iterdir()) == []
