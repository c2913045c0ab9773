"""Self-supervised (entity, section) queries for long notes ([CAPR2021] section 3.1).

A passage is the text of one section of one report. Each finding in it, with the section's
heading as the aspect, forms a query such as "impression: no pleural effusion"; the passages it
matches are every section under that heading that states the same finding with the same
polarity. No manual label is needed: entities come from the annotator, aspects from headings.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from clinsearch.train.batching import TrainingQuery
from clinsearch.train.labels import DEFAULT_TYPES, LabelSentence, QueryKey, normalise_text, usable

ASPECT_TEMPLATES: tuple[str, ...] = (
    "{aspect}: {entity}",
    "{entity} in {aspect}",
    "{entity} {aspect}",
)


def section_queries(
    sentences: Iterable[LabelSentence], *, types: tuple[str, ...] = DEFAULT_TYPES
) -> tuple[list[TrainingQuery], dict[str, str]]:
    """(entity, section) training queries and the passage texts they match, by passage id.

    Passage ids are ``REPORT@SECTION``; sentences without a section heading are skipped, and
    passages with the same text count once.
    """
    texts: dict[str, list[str]] = defaultdict(list)
    entities: dict[str, set[QueryKey]] = defaultdict(set)
    aspect_of: dict[str, str] = {}
    for sentence in sentences:
        if not sentence.section:
            continue
        pid = f"{sentence.report_id}@{sentence.section}"
        texts[pid].append(sentence.text)
        aspect_of[pid] = sentence.section
        for fact in sentence.findings:
            if usable(fact, types):
                entities[pid].add(QueryKey(fact.polarity, fact.concept, fact.name))
    passages: dict[str, str] = {}
    seen: set[str] = set()
    matched: dict[tuple[str, QueryKey], list[str]] = defaultdict(list)
    for pid, parts in texts.items():
        text = " ".join(parts)
        norm = normalise_text(text)
        if not entities[pid] or norm in seen:
            continue
        seen.add(norm)
        passages[pid] = text
        for key in entities[pid]:
            matched[(aspect_of[pid], key)].append(pid)
    queries = [
        TrainingQuery(
            tuple(
                t.format(aspect=aspect.replace("_", " "), entity=key.text) for t in ASPECT_TEMPLATES
            ),
            frozenset(ids),
        )
        for (aspect, key), ids in sorted(matched.items())
    ]
    return queries, passages
