"""Retrieval metrics per query through ir_measures (pytrec_eval), following trec_eval conventions.

Conventions: a document is relevant when its grade is > 0; nDCG uses the grades as gains
(trec_eval's linear gain); only queries with at least one relevant document are evaluated;
a judged query missing from the run scores 0 on every measure (trec_eval ``-c``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

import ir_measures
from ir_measures import AP, RR, Bpref, Measure, P, R, Rprec, nDCG

from clinsearch.errors import InputError
from clinsearch.trec import Qrels, Run

DEFAULT_MEASURES = (
    "map",
    "rprec",
    "p@10",
    "ndcg@10",
    "bpref",
    "mrr",
    "recall@1",
    "recall@5",
    "recall@100",
)
RECALL_DEPTHS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)

_FIXED = {
    "map": AP,
    "ap": AP,
    "rprec": Rprec,
    "r-prec": Rprec,
    "bpref": Bpref,
    "mrr": RR,
    "rr": RR,
    "ndcg": nDCG,
}
_CUTOFF = {"p": P, "precision": P, "ndcg": nDCG, "recall": R, "r": R}
_NAMES = {AP: "MAP", Rprec: "R-prec", Bpref: "bpref", RR: "MRR", nDCG: "nDCG"}
_CUT_NAMES = {"P": "P", "nDCG": "nDCG", "R": "Recall"}


def parse_measure(name: str) -> Measure:
    """A measure from a friendly name (``map``, ``ndcg@10``, ``recall@5``, ``mrr``...) or an
    ir_measures name (``AP``, ``nDCG@10``, ``R@5``, ``RR``); raises InputError when unknown."""
    key = name.strip().lower()
    if key in _FIXED:
        return _FIXED[key]
    m = re.fullmatch(r"([a-z-]+)@(\d+)", key)
    if m and m.group(1) in _CUTOFF and int(m.group(2)) > 0:
        return _CUTOFF[m.group(1)] @ int(m.group(2))
    try:
        return ir_measures.parse_measure(name.strip())
    except (ValueError, TypeError, NameError, SyntaxError):
        raise InputError(
            f"unknown metric {name!r}; use e.g. map, rprec, p@10, ndcg@10, bpref, mrr, recall@5",
            field="metric",
        ) from None


def display_name(measure: Measure) -> str:
    """The name shown in tables: MAP, R-prec, P@10, nDCG@10, bpref, MRR, Recall@5."""
    if measure in _NAMES:
        return _NAMES[measure]
    cutoff = measure.params.get("cutoff")
    base = _CUT_NAMES.get(measure.NAME)
    if base is not None and cutoff is not None and len(measure.params) == 1:
        return f"{base}@{cutoff}"
    return str(measure)


def judged_queries(qrels: Qrels) -> list[str]:
    """Query ids with at least one relevant document, in qrels order: the evaluated queries."""
    return [qid for qid, docs in qrels.grades.items() if any(g > 0 for g in docs.values())]


def per_query(qrels: Qrels, run: Run, measures: Sequence[Measure]) -> dict[str, dict[str, float]]:
    """``{display name: {qid: value}}`` over `judged_queries`; queries absent from the run get 0."""
    qids = judged_queries(qrels)
    values = {display_name(m): dict.fromkeys(qids, 0.0) for m in measures}
    names = {m: display_name(m) for m in measures}
    grades = {q: qrels.grades[q] for q in qids}
    scores = {q: d for q, d in run.scores.items() if q in grades}
    for metric in ir_measures.iter_calc(list(measures), grades, scores):
        values[names[metric.measure]][metric.query_id] = float(metric.value)
    return values


def recall_curve(
    qrels: Qrels, run: Run, depths: Iterable[int] = RECALL_DEPTHS
) -> dict[int, dict[str, float]]:
    """``{depth: {qid: Recall@depth}}`` for recall-at-depth curves."""
    depths = list(depths)
    table = per_query(qrels, run, [R @ d for d in depths])
    return {d: table[f"Recall@{d}"] for d in depths}
