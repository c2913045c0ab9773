"""Embedding separation ([Shi2022], Table 3): does a scorer prefer the matched-polarity query?

For each labelled (sentence, finding, polarity) triple, the matched query is "M" for a present
finding and "no M" for an absent one; the opposite query flips it. The separation is
score(matched, sentence) - score(opposite, sentence); a negation-aware scorer gives a clearly
positive mean, a negation-blind one a mean near zero.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

import numpy as np

from clinsearch.errors import DataError
from clinsearch.query_file import NEGATION_PREFIX

Scorer = Callable[[Sequence[str], Sequence[str]], Sequence[float]]
"""``score(queries, sentences)`` -> one score per (queries[i], sentences[i]) pair."""


@dataclass(frozen=True, slots=True)
class Labelled:
    """A sentence with one finding it asserts (``present``) or rules out (``absent``)."""

    sentence: str
    finding: str
    polarity: Literal["present", "absent"]


@dataclass(frozen=True, slots=True)
class Separation:
    """Mean and (population) standard deviation of the score differences over ``n`` triples."""

    n: int
    mean: float
    std: float
    differences: tuple[float, ...]

    def __str__(self) -> str:
        return f"{self.mean:.2f}±{self.std:.2f} (n={self.n})"


def finding_query(finding: str, polarity: str) -> str:
    """Paper 000's query forms: "M" for a present finding, "no M" for an absent one."""
    return f"{NEGATION_PREFIX}{finding}" if polarity == "absent" else finding


def separation(triples: Iterable[Labelled], score: Scorer) -> Separation:
    """Score every triple with its matched and its opposite-polarity query; summarise the gap."""
    items = list(triples)
    if not items:
        raise DataError("no labelled triples to measure separation on")
    sentences = [t.sentence for t in items]
    opposite = {"present": "absent", "absent": "present"}
    matched = np.asarray(
        score([finding_query(t.finding, t.polarity) for t in items], sentences), dtype=float
    )
    flipped = np.asarray(
        score([finding_query(t.finding, opposite[t.polarity]) for t in items], sentences),
        dtype=float,
    )
    if matched.shape != (len(items),) or flipped.shape != (len(items),):
        raise ValueError("the scorer must return one score per (query, sentence) pair")
    diff = matched - flipped
    return Separation(len(items), float(diff.mean()), float(diff.std()), tuple(diff.tolist()))


class Encoder(Protocol):
    """Anything that embeds texts as unit vectors, like `clinsearch.models.SentenceEncoder`."""

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray: ...


def cosine_scorer(encoder: Encoder) -> Scorer:
    """A `Scorer` giving the cosine similarity of each query and sentence under ``encoder``.

    Each distinct text is embedded once and remembered, since `separation` scores every
    sentence twice.
    """
    cache: dict[str, np.ndarray] = {}

    def embed(texts: Sequence[str]) -> np.ndarray:
        if new := [t for t in dict.fromkeys(texts) if t not in cache]:
            cache.update(zip(new, encoder.encode_queries(new), strict=True))
        return np.stack([cache[t] for t in texts])

    def score(queries: Sequence[str], sentences: Sequence[str]) -> np.ndarray:
        return np.einsum("ij,ij->i", embed(queries), embed(sentences))

    return score
