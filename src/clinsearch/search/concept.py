"""Concept search (``--method concept``): finding patterns matched against the concept index.

The query is parsed into finding patterns, candidates come from the concept postings, sentences
are ranked by pattern completeness (ties by pattern similarity) and lifted to report, visit and
patient by their best sentence. Each hit explains which query parts its sentence matched.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from clinsearch.errors import ClinsearchError
from clinsearch.index.concepts import ConceptIndex
from clinsearch.search.aggregate import Scored, top_groups
from clinsearch.search.concept_rank import (
    POLARITY_MODES,
    ConceptRanker,
    PolarityOptions,
    SentenceScore,
)
from clinsearch.search.concept_tools import concept_tools, index_lexicon_path
from clinsearch.search.hit import Hit, Level
from clinsearch.search.hits import make_hits
from clinsearch.search.query import ParsedQuery

if TYPE_CHECKING:
    from clinsearch.index import Index


class ConceptRetriever:
    """Ranks sentences by how completely their findings match the query's finding patterns."""

    def __init__(self, index: Index, *, include_uncertain: bool = False,
                 polarity: str = "query") -> None:
        if polarity not in POLARITY_MODES:
            raise ClinsearchError(
                f"unknown polarity mode {polarity!r}; choose one of {', '.join(POLARITY_MODES)}")
        self.store = index.store
        tools = concept_tools(index_lexicon_path(index))
        self.parser = tools.parser
        concepts: ConceptIndex = index.component("concepts")
        self.ranker = ConceptRanker(concepts, tools.hierarchy, tools.parser.vectors)
        self.options = PolarityOptions(include_uncertain, polarity)
        self._sentence_row = {sid: row for row, sid in enumerate(self.store.sentence_ids)}

    def search(self, query: str, level: Level, top: int) -> list[Hit]:
        """The ``top`` best hits at ``level`` for ``query``."""
        parsed = self.parser.parse(query)
        ranked = self.ranker.rank(parsed, self.options)
        rows = np.array([self._sentence_row[r.sentence_id] for r in ranked], dtype=np.int64)
        scores = np.array([r.score for r in ranked], dtype=np.float64)
        best = top_groups(
            lambda n: Scored(scores[:n], rows[:n], n >= len(ranked)),
            partial(self.store.groups, level, "sentence"),
            top,
        )
        by_row = {int(row): r for row, r in zip(rows.tolist(), ranked, strict=True)}
        picked = [by_row[int(row)] for row in best.rows.tolist()]
        marks = [self._marks(r) for r in picked]
        return make_hits(
            self.store, level, best.scores, best.rows,
            [tuple((s, e) for s, e, _ in m) for m in marks],
            [self._explain(parsed, r, m) for r, m in zip(picked, marks, strict=True)],
        )

    def search_many(self, queries: Sequence[str], level: Level, top: int) -> list[list[Hit]]:
        """``search`` for each query in turn."""
        return [self.search(query, level, top) for query in queries]

    def _marks(self, scored: SentenceScore) -> list[tuple[int, int, str]]:
        """Character spans in the sentence of the matched findings: (start, end, query part)."""
        findings = self.ranker.index.findings
        text = self.store.sentence_texts[self._sentence_row[scored.sentence_id]]
        out = []
        for part in scored.parts:
            start = findings.column("start")[part.row].as_py()
            end = findings.column("end")[part.row].as_py()
            if 0 <= start < end <= len(text):
                out.append((start, end, part.query.name))
        return sorted(set(out))

    def _explain(self, parsed: ParsedQuery, scored: SentenceScore,
                 marks: list[tuple[int, int, str]]) -> dict[str, Any]:
        """Which query parts the sentence matched, and the sentence with them marked."""
        idx = self.ranker.index
        text = self.store.sentence_texts[self._sentence_row[scored.sentence_id]]
        matched = []
        for part in scored.parts:
            code = int(idx.pattern_code[part.row])
            matched.append({
                "query_pattern": part.query.pattern,
                "pattern": idx.patterns[code],
                **part.match.explain(),
                "similarity": round(part.similarity, 4),
            })
        return {
            "method": "concept",
            "query_patterns": parsed.patterns,
            "mapped_words": [
                {"phrase": m.phrase, "to": m.nearest[0][0].text,
                 "similarity": round(m.nearest[0][1], 4)}
                for m in parsed.mappings if m.used
            ],
            "matched": matched,
            "summary": "; ".join(_summary(m) for m in matched),
            "marked": _marked(text, marks),
        }


def _summary(m: dict[str, Any]) -> str:
    """One line per matched part, e.g. ``pneumonia exact, present, right ✓, lower lobe ✗``."""
    parts = [f"{m['pattern'].split('|')[2]} {m['concept']}",
             "polarity ✓" if m["polarity"] else "polarity ✗"]
    parts += [f"{v} {'✓' if s == 1 else '½' if s > 0 else '✗'}" for v, s in m["modifiers"].items()]
    return ", ".join(parts)


def _marked(text: str, marks: list[tuple[int, int, str]]) -> str:
    """``text`` with each matched span wrapped in square brackets."""
    out, pos = [], 0
    for start, end, _ in sorted(marks):
        if start < pos:
            continue
        out += [text[pos:start], "[", text[start:end], "]"]
        pos = end
    out.append(text[pos:])
    return "".join(out)
