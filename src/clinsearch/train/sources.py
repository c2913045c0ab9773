"""Where training sentences come from: an index directory's sentences and their findings.

Findings are read from the index's findings table when it has one; otherwise
the sentences are annotated here (each distinct text once).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from clinsearch.progress import track
from clinsearch.train.labels import FindingFacts, LabelSentence

if TYPE_CHECKING:
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.index import IndexStore
    from clinsearch.index.findings import FindingsTable

FINDING_COLUMNS = ["sentence_id", "concept", "name", "type", "polarity", "context", "modifiers"]


def _stored_findings(findings: FindingsTable) -> dict[str, list[FindingFacts]]:
    """Findings by sentence id from a generation's findings table."""
    out: dict[str, list[FindingFacts]] = defaultdict(list)
    for row in findings.table(FINDING_COLUMNS).to_pylist():
        out[row["sentence_id"]].append(FindingFacts.from_row(row))
    return out


def _annotated(
    texts: Sequence[str], annotator: Annotator, progress: bool
) -> list[list[FindingFacts]]:
    """Findings of each text, annotating each distinct text once."""
    unique = list(dict.fromkeys(texts))
    found = track(
        annotator.annotate_many(unique), "annotating sentences", total=len(unique), enabled=progress
    )
    facts = {t: [FindingFacts.of(f) for f in fs] for t, fs in zip(unique, found, strict=True)}
    return [facts[t] for t in texts]


def index_sentences(
    index: IndexStore, *, annotator: Annotator | None = None, progress: bool = True
) -> list[LabelSentence]:
    """Every sentence of the index's live generation with its findings and section."""
    gen = index.generation
    table = gen.table("sentences", ["id", "report_id", "section", "text"])
    ids = table.column("id").to_pylist()
    texts = table.column("text").to_pylist()
    if "findings" in index.config.components and annotator is None:
        by_id = _stored_findings(index.component("findings"))
        findings = [by_id.get(i, []) for i in ids]
    else:
        if annotator is None:
            from clinsearch.annotate.annotator import Annotator

            annotator = Annotator()
        findings = _annotated(texts, annotator, progress)
    return [
        LabelSentence(i, t, tuple(f), section=s or "", report_id=r)
        for i, t, f, s, r in zip(
            ids,
            texts,
            findings,
            table.column("section").to_pylist(),
            table.column("report_id").to_pylist(),
            strict=True,
        )
    ]
