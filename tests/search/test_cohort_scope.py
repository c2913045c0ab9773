"""Cohort scopes: a query restricted to some reports answers exactly as the same query over a
corpus of only those reports; term bundles in the cohort language; breakdowns for charts."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from clinsearch.search.cohort.arrays import CohortArrays
from clinsearch.search.cohort.breakdown import cohort_breakdown, polarity_mix
from clinsearch.search.cohort.engine import CohortEngine, Scope
from clinsearch.search.cohort.syntax import (
    BundleTerm,
    CohortSyntaxError,
    Group,
    Or,
    Term,
    TextMatch,
    parse,
)

from .corpus_gen import Corpus, generate
from .test_cohort_engine import QUERIES, SPECS, resolve

BUNDLES = {"lunginfection": (BundleTerm("pneumonia", True), BundleTerm("effusion", True),
                             BundleTerm("port", False))}


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return generate(seed=11, patients=60)


def engine_of(corpus: Corpus, report_ids: set[str] | None = None) -> CohortEngine:
    """An engine over the corpus, or over only the reports ``report_ids``."""
    reports, sentences, findings = corpus.arrow()
    if report_ids is not None:
        keep = pa.array(sorted(report_ids))
        reports, sentences, findings = (
            t.filter(pa.compute.is_in(t.column(column), value_set=keep))
            for t, column in ((reports, "id"), (sentences, "report_id"),
                              (findings, "report_id")))
    return CohortEngine(CohortArrays.from_arrow(reports, sentences, findings),
                        lambda _query: resolve)


@pytest.mark.parametrize("seed", range(4))
def test_a_restricted_query_is_the_query_over_the_restricted_corpus(corpus: Corpus,
                                                                     seed: int) -> None:
    rng = random.Random(seed)
    whole = engine_of(corpus)
    patients = sorted({r["patient_id"] for r in corpus.reports})
    chosen = set(rng.sample(patients, 20))
    mask, missing = whole.arrays.id_mask("patient_id", [*chosen, "nobody"])
    assert missing == ["nobody"]
    kept = {r["id"] for r in corpus.reports if r["patient_id"] in chosen}
    part = engine_of(corpus, kept)
    for query in [*QUERIES, 'bundle:"Lung infection" AND NOT no pneumothorax']:
        for level in ("patient", "visit", "report", "sentence"):
            scope = Scope(BUNDLES, mask)
            assert whole.ids(query, level, scope) == part.ids(query, level, Scope(BUNDLES)), (
                query, level)


def test_report_lists_restrict_by_report(corpus: Corpus) -> None:
    whole = engine_of(corpus)
    ids = [r["id"] for r in corpus.reports[::3]]
    mask, _ = whole.arrays.id_mask("id", ids)
    part = engine_of(corpus, set(ids))
    assert whole.counts("NOT pneumonia", Scope(reports=mask)) == part.counts("NOT pneumonia")


def test_bundles_read_as_the_or_of_their_terms(corpus: Corpus) -> None:
    engine = engine_of(corpus)
    tree = parse('bundle:"LUNG  infection"', BUNDLES)  # names compare folded
    assert tree == Group(Or((Term("pneumonia", 0, 24), Term("effusion", 0, 24),
                             TextMatch("port", 0, 24))), None, 0, 24)
    for level in ("patient", "report"):
        assert engine.ids('bundle:"lung infection"', level, Scope(BUNDLES)) == engine.ids(
            'pneumonia OR effusion OR text:"port"', level)
    with pytest.raises(CohortSyntaxError) as error:
        parse('pneumonia AND bundle:"heart failure"', BUNDLES)
    assert error.value.position == 14 and "unknown bundle 'heart failure'" in error.value.message
    with pytest.raises(CohortSyntaxError, match="none is defined here"):
        parse("bundle:x")


def test_breakdown_counts_the_matching_reports(corpus: Corpus) -> None:
    engine = engine_of(corpus)
    query = "pneumonia OR effusion"
    matched = {i[-1] for i in engine.ids(query, "report")}
    by_id = {r["id"]: r for r in corpus.reports}
    got = cohort_breakdown(engine, query)
    assert got.year == dict(sorted(Counter(by_id[r]["date"][:4] or "undated"
                                           for r in matched).items()))
    assert sum(got.type.values()) == sum(got.month.values()) == len(matched)
    sections: Counter[str] = Counter()
    for _report, section in {(f["report_id"], f["section"]) for f in corpus.findings
                            if f["report_id"] in matched and f["polarity"] == "present"
                            and f["concept"] in SPECS["pneumonia"].concepts
                            + SPECS["effusion"].concepts}:
        sections[section.lower() or "(none)"] += 1
    assert got.section == dict(sorted(sections.items()))


def test_polarity_mix_counts_reports_per_reading(corpus: Corpus) -> None:
    engine = engine_of(corpus)
    mix = polarity_mix(engine, SPECS["pneumothorax"])
    for polarity in ("present", "absent", "uncertain"):
        expected = {f["report_id"] for f in corpus.findings
                    if f["concept"] == "pneumothorax" and f["polarity"] == polarity}
        assert mix[polarity] == len(expected)
    assert mix["historical"] == 0  # the generated findings carry no context
    within = np.zeros(engine.arrays.size["report"], dtype=bool)
    assert polarity_mix(engine, SPECS["pneumothorax"], Scope(reports=within)) == dict.fromkeys(
        mix, 0)
