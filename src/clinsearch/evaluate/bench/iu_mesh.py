"""IU X-ray report-level benchmark from the manual MeSH labels (mapped by evaluate/mesh.py).

Three kinds of query, all over reports:

- ``core``: a lexicon concept's preferred name ("cardiomegaly"); relevant (grade 1) are reports
  whose MeSH labels map to the concept or to a descendant of it in the lexicon.
- ``modifier``: a concept with one or two modifier values that a single MeSH term carries
  together, phrased naturally ("mild cardiomegaly", "left lower lobe opacity"). Relevant: a term
  of the concept has every queried value. Judged not relevant (grade 0): every term of the
  concept has another value in a queried category (right, not left). Other reports labelled
  with the concept stay unjudged (MeSH leaves the queried detail unspecified).
- ``synonym``: the concept under the lexicon synonym most often written in the corpus among
  those sharing no word (nor word start) with its MeSH headings or its name ("enlarged heart"
  for Cardiomegaly); relevance as for ``core``.

Deterministic: the same reports, lexicon and map give the same files.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from clinsearch.annotate.lexicon import Lexicon
from clinsearch.corpus.model import Report
from clinsearch.evaluate.bench.benchmark import Benchmark, phrase, words
from clinsearch.evaluate.mesh import MeshMap, parse_mesh
from clinsearch.query_file import Query
from clinsearch.trec import Qrels

MESH_FIELD = "MeSH"
MAX_SYNONYM_WORDS = 4
Values = tuple[tuple[str, str], ...]  # sorted (category, value) pairs


@dataclass(frozen=True)
class ReportGold:
    """One report's mapped MeSH terms: (concept, its modifier values) per term."""

    report_id: str
    terms: tuple[tuple[str, Values], ...]

    @property
    def concepts(self) -> set[str]:
        """The concepts the report is labelled with."""
        return {c for c, _ in self.terms}


def report_gold(reports: Iterable[Report], mesh: MeshMap) -> list[ReportGold]:
    """Each report's mapped MeSH terms (ignored headings dropped)."""
    out = []
    for report in reports:
        terms = []
        for term in parse_mesh(report.metadata.get(MESH_FIELD, "")):
            concept = mesh.concept_of(term)
            if concept is not None:
                terms.append((concept, tuple(sorted(mesh.modifier_values(term)))))
        out.append(ReportGold(report.id, tuple(terms)))
    return out


def descendants(lexicon: Lexicon) -> dict[str, set[str]]:
    """Each concept with every concept below it (itself included), through ``parents``."""
    children: dict[str, set[str]] = defaultdict(set)
    for concept in lexicon.concepts.values():
        for parent in concept.parents:
            children[parent].add(concept.id)
    out = {}
    for cid in lexicon.concepts:
        seen, todo = {cid}, [cid]
        while todo:
            for child in children[todo.pop()] - seen:
                seen.add(child)
                todo.append(child)
        out[cid] = seen
    return out


def _related(words: set[str], avoid: set[str]) -> bool:
    """Whether any word shares a four-letter start with an avoided one (granulomas, granuloma)."""
    return any(w[:4] == a[:4] for w in words for a in avoid if min(len(w), len(a)) >= 4) or bool(
        words & avoid
    )


def corpus_text(reports: Iterable[Report]) -> str:
    """All report texts as one lowercase string of words between spaces, for phrase counts."""
    return (
        " " + " | ".join(" ".join(re.findall(r"[a-z0-9]+", r.text.lower())) for r in reports) + " "
    )


def synonym(lexicon: Lexicon, concept: str, avoid: set[str], text: str) -> str | None:
    """The lexicon term for ``concept`` most often written in ``text`` (see `corpus_text`)
    that shares no word or word start with ``avoid``; None when there is none."""
    forms = [
        t
        for t in lexicon.concepts[concept].terms
        if len(t.split()) <= MAX_SYNONYM_WORDS and words(t) and not _related(words(t), avoid)
    ]
    if not forms:
        return None
    count = {
        t: text.count(" " + " ".join(re.findall(r"[a-z0-9]+", t.lower())) + " ") for t in forms
    }
    return min(forms, key=lambda t: (-count[t], len(t.split()), t))


def _qid(prefix: str, text: str) -> str:
    """A whitespace-free query id such as ``core:pleural_effusion``."""
    return f"{prefix}:{re.sub(r'[^a-z0-9]+', '_', text.lower()).strip('_')}"


def iu_mesh_benchmark(
    reports: Sequence[Report], lexicon: Lexicon, mesh: MeshMap, min_relevant: int = 5
) -> Benchmark:
    """Core, modifier and synonym queries, each with at least ``min_relevant`` relevant reports."""
    gold = report_gold(reports, mesh)
    text = corpus_text(reports)
    below = descendants(lexicon)
    headings: dict[str, set[str]] = defaultdict(set)
    for heading, rules in mesh.headings.items():
        for rule in rules:
            if rule.concept:
                headings[rule.concept] |= words(heading)
    queries: list[Query] = []
    grades: dict[str, dict[str, int]] = {}

    def add(qid: str, text: str, kind: str, docs: dict[str, int]) -> None:
        if sum(g > 0 for g in docs.values()) >= min_relevant and qid not in grades:
            queries.append(Query(qid, text, kind))
            grades[qid] = docs

    labelled: dict[str, list[ReportGold]] = defaultdict(list)  # concept -> its reports
    for g in gold:
        for concept in g.concepts:
            labelled[concept].append(g)
    core = sorted(c for c in lexicon.concepts if any(d in labelled for d in below[c]))
    for cid in core:
        name = lexicon.concepts[cid].name
        docs = {g.report_id: 1 for d in below[cid] for g in labelled.get(d, ())}
        add(_qid("core", name), name, "core", docs)
        if _qid("core", name) in grades:  # synonyms only for the concepts queried by name
            term = synonym(lexicon, cid, headings[cid] | words(name), text)
            if term is not None:
                add(_qid("syn", term), term, "synonym", docs)
    for cid, values in _modifier_combinations(gold):
        if cid in lexicon.concepts:
            text = phrase(lexicon.concepts[cid].name, values)
            add(_qid("mod", text), text, "modifier", _modifier_grades(labelled[cid], cid, values))
    order = {"core": 0, "modifier": 1, "synonym": 2}
    queries.sort(key=lambda q: (order[q.kind], q.qid))
    return Benchmark(queries, Qrels({q.qid: grades[q.qid] for q in queries}))


def _modifier_combinations(gold: Sequence[ReportGold]) -> list[tuple[str, Values]]:
    """Every (concept, one or two modifier values) a single MeSH term carries, sorted."""
    combos: set[tuple[str, Values]] = set()
    for g in gold:
        for concept, values in g.terms:
            for i, first in enumerate(values):
                combos.add((concept, (first,)))
                combos.update((concept, (first, second)) for second in values[i + 1 :])
    return sorted(combos)


def _modifier_grades(gold: Sequence[ReportGold], concept: str, values: Values) -> dict[str, int]:
    """Grade 1 (one term has every value) or 0 (every term has another value in a queried
    category) for the reports labelled with ``concept``; others stay unjudged."""
    wanted: dict[str, set[str]] = defaultdict(set)
    for category, value in values:
        wanted[category].add(value)

    def conflicts(term: Values) -> bool:
        return any(c in wanted and v not in wanted[c] for c, v in term)

    docs = {}
    for g in gold:
        terms = [v for c, v in g.terms if c == concept]
        if any(set(values) <= set(v) for v in terms):
            docs[g.report_id] = 1
        elif terms and all(conflicts(v) for v in terms):
            docs[g.report_id] = 0
    return docs
