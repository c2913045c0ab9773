"""Passage-level benchmark ([CAPR2021]): (entity, section) queries over sectioned notes.

Each named section of a report is a passage (id ``REPORT@SECTION``, ``REPORT@SECTION-2`` for a
second section of the same name). A query pairs an entity, a
finding the section asserts, phrased with its modifiers ("mild right lower lobe atelectasis"),
with the section's name; relevant are the passages of that section that assert the same finding
with the same modifiers. Queries with at most ``max_relevant`` relevant passages are sampled
(seeded), so Recall@1 and Recall@5 stay meaningful. The passages are written as a JSONL corpus
to index, and the query kinds are the section names.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from clinsearch.annotate.finding import Finding, asserted
from clinsearch.corpus.model import Report, SegmentedReport
from clinsearch.errors import DataError
from clinsearch.evaluate.bench.benchmark import Benchmark, phrase
from clinsearch.evaluate.bench.weak import FINDING_TYPES
from clinsearch.query_file import Query
from clinsearch.trec import Qrels


@dataclass(frozen=True)
class PassageBenchmark:
    """The passages (to index as reports) and the benchmark over them."""

    passages: list[Report]
    bench: Benchmark


def passages_of(doc: SegmentedReport) -> list[tuple[Report, list[int]]]:
    """Each named section holding sentences, as a passage report with its sentences' positions."""
    out = []
    report = doc.report
    seen: dict[str, int] = {}
    for section in doc.sections:
        text = report.text[section.start : section.end].strip()
        if not section.name or not text:
            continue
        inside = [
            i
            for i, s in enumerate(doc.sentences)
            if s.section == section.name and section.start <= s.start < section.end
        ]
        if not inside:  # a heading with nothing under it
            continue
        seen[section.name] = seen.get(section.name, 0) + 1
        suffix = f"-{seen[section.name]}" if seen[section.name] > 1 else ""
        passage = Report(
            id=f"{report.id}@{section.name}{suffix}",
            text=text,
            patient_id=report.patient_id,
            visit_id=report.visit_id,
            type=section.name,
            date=report.date,
        )
        out.append((passage, inside))
    return out


def entities(findings: Iterable[Finding], types: Sequence[str] = FINDING_TYPES) -> set[str]:
    """The asserted present findings, phrased with their modifiers."""
    return {
        phrase(f.name, tuple((m.category, m.value) for m in f.modifiers))
        for f in findings
        if f.polarity == "present" and f.type in types and asserted(f.context)
    }


def passage_benchmark(
    docs: Iterable[tuple[SegmentedReport, Sequence[Sequence[Finding]]]],
    max_relevant: int = 3,
    max_queries: int = 200,
    seed: int = 0,
) -> PassageBenchmark:
    """Build passages and (entity, section) queries from segmented reports and the findings of
    each of their sentences (in sentence order)."""
    passages: list[Report] = []
    relevant: dict[tuple[str, str], list[str]] = defaultdict(list)
    for doc, findings in docs:
        for passage, inside in passages_of(doc):
            passages.append(passage)
            for entity in sorted(entities(f for i in inside for f in findings[i])):
                relevant[(entity, passage.type)].append(passage.id)
    candidates = sorted(key for key, ids in relevant.items() if len(ids) <= max_relevant)
    if not candidates:
        raise DataError("no (entity, section) pair is asserted by few enough passages")
    chosen = sorted(random.Random(seed).sample(candidates, min(max_queries, len(candidates))))
    queries, grades = [], {}
    for n, (entity, section) in enumerate(chosen, start=1):
        qid = f"psg{n:04d}"
        queries.append(Query(qid, f"{entity} {section}", section))
        grades[qid] = dict.fromkeys(relevant[(entity, section)], 1)
    return PassageBenchmark(passages, Benchmark(queries, Qrels(grades)))
