"""Training pairs, shuffled batches and the false-negative mask for in-batch negatives."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from clinsearch.train.labels import QueryLabel


@dataclass(frozen=True, slots=True)
class TrainingQuery:
    """A query's phrasings (canonical first) and every text id it matches."""

    variants: tuple[str, ...]
    matched: frozenset[str]


@dataclass(frozen=True, slots=True)
class Pair:
    """One labelled entry: a query (by index) and one of its matched text ids."""

    query: int
    text_id: str


@dataclass(frozen=True, slots=True)
class Batch:
    """A batch of (query text, matched text) pairs with its false-negative mask."""

    queries: list[str]
    texts: list[str]
    matches: torch.Tensor  # bool [n, n]: text j also matches query i (diagonal always True)


def training_queries(
    labels: Sequence[QueryLabel], *, phrasings: bool = True
) -> list[TrainingQuery]:
    """Weak labels as training queries; without ``phrasings`` only the canonical "M" / "no M"."""
    return [
        TrainingQuery(q.key.variants() if phrasings else (q.key.text,), frozenset(q.sentence_ids))
        for q in labels
    ]


def training_pairs(
    queries: Sequence[TrainingQuery], *, max_per_query: int | None = None, seed: int = 0
) -> list[Pair]:
    """Every (query, matched text) entry; at most ``max_per_query`` per query, sampled."""
    rng = random.Random(seed)
    pairs: list[Pair] = []
    for index, query in enumerate(queries):
        ids = sorted(query.matched)
        if max_per_query is not None and len(ids) > max_per_query:
            ids = sorted(rng.sample(ids, max_per_query))
        pairs.extend(Pair(index, i) for i in ids)
    return pairs


def match_mask(queries: Sequence[TrainingQuery], pairs: Sequence[Pair]) -> torch.Tensor:
    """``mask[i, j]`` is True when pair j's text matches pair i's query: never a negative for it."""
    mask = torch.tensor(
        [[p.text_id in queries[a.query].matched for p in pairs] for a in pairs], dtype=torch.bool
    )
    return mask | torch.eye(len(pairs), dtype=torch.bool)


def epoch_batches(
    queries: Sequence[TrainingQuery],
    pairs: Sequence[Pair],
    texts: Mapping[str, str],
    *,
    batch_size: int,
    seed: int,
) -> list[Batch]:
    """The batches of one epoch: pairs shuffled and a phrasing drawn per pair, both from ``seed``.

    The same seed gives the same batches, which is what lets training resume mid-epoch.
    A last batch of fewer than two pairs (no in-batch negative possible) is dropped.
    """
    rng = random.Random(seed)
    order = list(pairs)
    rng.shuffle(order)
    out: list[Batch] = []
    for start in range(0, len(order), batch_size):
        chunk = order[start : start + batch_size]
        if len(chunk) < 2:
            continue
        out.append(
            Batch(
                queries=[rng.choice(queries[p.query].variants) for p in chunk],
                texts=[texts[p.text_id] for p in chunk],
                matches=match_mask(queries, chunk),
            )
        )
    return out
