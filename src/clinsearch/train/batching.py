"""Training pairs, shuffled batches and the false-negative mask for in-batch negatives."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from clinsearch.train.labels import QueryLabel


@dataclass(frozen=True, slots=True)
class TrainingQuery:
    """A query's phrasings (canonical first), every text id it matches, and its finding.

    ``finding`` (concept and modifier values, e.g. ``pneumothorax|left``) and ``polarity`` let a
    batch hold a query's opposite ("no M" for "M"); both are empty for queries without one.
    """

    variants: tuple[str, ...]
    matched: frozenset[str]
    finding: str = ""
    polarity: str = ""


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
        TrainingQuery(
            q.key.variants() if phrasings else (q.key.text,),
            frozenset(q.sentence_ids),
            finding="|".join([q.key.concept, *q.key.modifiers]),
            polarity=q.key.polarity,
        )
        for q in labels
    ]


def opposite_queries(queries: Sequence[TrainingQuery]) -> list[int | None]:
    """For each query, the index of the query with the same finding and the other polarity."""
    by_finding: dict[str, dict[str, int]] = {}
    for index, query in enumerate(queries):
        if query.finding:
            by_finding.setdefault(query.finding, {})[query.polarity] = index
    out: list[int | None] = []
    for query in queries:
        others = [i for p, i in by_finding.get(query.finding, {}).items() if p != query.polarity]
        out.append(others[0] if query.finding and others else None)
    return out


def with_opposites(
    queries: Sequence[TrainingQuery], pairs: Sequence[Pair], rng: random.Random
) -> list[Pair]:
    """``pairs`` with each followed by a random pair of its query's opposite, where one exists.

    Adjacent pairs share a batch, so "M" meets a "no M" sentence as an in-batch negative (and
    the reverse) for every finding that has both, instead of by chance.
    """
    opposite = opposite_queries(queries)
    matched = [sorted(q.matched) for q in queries]
    out: list[Pair] = []
    for pair in pairs:
        out.append(pair)
        other = opposite[pair.query]
        if other is not None:
            out.append(Pair(other, rng.choice(matched[other])))
    return out


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
    pair_opposites: bool = False,
) -> list[Batch]:
    """The batches of one epoch: pairs shuffled and a phrasing drawn per pair, both from ``seed``.

    With ``pair_opposites`` every pair brings a pair of its opposite-polarity query along
    (``with_opposites``), so an epoch holds more pairs. The same seed gives the same batches,
    which is what lets training resume mid-epoch. A last batch of fewer than two pairs (no
    in-batch negative possible) is dropped.
    """
    rng = random.Random(seed)
    order = list(pairs)
    rng.shuffle(order)
    if pair_opposites:
        order = with_opposites(queries, order, rng)
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
