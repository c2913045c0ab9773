"""Embeddings of every lexicon surface form, computed once per (lexicon, encoder) and cached.

They serve two jobs: query words the lexicon does not know are mapped to the nearest lexicon
terms, and finding patterns are compared as the mean vector of their parts
([SyedaMahmood2021] 3.6).
Each table belongs to one encoder: MiniLM, or a trained term model for the word mapping.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Protocol

import numpy as np

from clinsearch.annotate.finding import POLARITIES
from clinsearch.annotate.lexicon import CONCEPT_TYPES, Lexicon
from clinsearch.atomic import atomic_path
from clinsearch.cache_dir import default_cache_dir, private_folder

TERM_BATCH = 1024  # lexicon terms embedded per step of the progress bar


class Encoder(Protocol):
    """What the vocabulary needs of a sentence encoder (``models.encoder.SentenceEncoder``)."""

    fingerprint: str

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Unit vectors, one row per text."""
        ...


class DefaultEncoder:
    """An encoder folder for term vectors whose model is loaded on first encode only.

    The default MiniLM, or a term encoder from ``clinsearch train terms``. Its fingerprint is
    computed from the folder's files, so cached term vectors can be found without loading it;
    it hashes the weights (90 MB for MiniLM), so only when first asked for: a cohort whose
    terms are all in the lexicon never needs it.
    """

    def __init__(self, path: str | Path | None = None, what: str = "encoder model") -> None:
        """Check the folder at ``path`` now (errors name it and ``what`` it is for)."""
        from clinsearch.models.folder import default_encoder_path
        from clinsearch.models.model_names import check_named_model

        self.path = check_named_model(path or default_encoder_path(), what)

    @cached_property
    def fingerprint(self) -> str:
        """The model folder's fingerprint (``models.folder.fingerprint``)."""
        from clinsearch.models.folder import fingerprint

        return fingerprint(self.path)

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        """Unit vectors of ``queries``: a few short ones in NumPy when the model is a BERT in
        MiniLM's layout (no torch to import), others by the model loaded once per process."""
        from clinsearch.models.encoder import SMALL_INPUT, load_encoder
        from clinsearch.models.numpy_bert import numpy_bert

        bert = numpy_bert(self.path) if len(queries) <= SMALL_INPUT else None
        vectors = bert.encode(queries) if bert is not None else None
        return vectors if vectors is not None else load_encoder(self.path).encode_queries(queries)


@dataclass(frozen=True, slots=True)
class LexTerm:
    """A surface form of the lexicon and what it stands for."""

    text: str
    kind: str  # "concept", "modifier" or "part" (finding types and polarity words)
    ref: str  # concept id, "category:value" for a modifier, or the word itself


def lexicon_terms(lexicon: Lexicon) -> list[LexTerm]:
    """Every concept form, modifier form and pattern word of ``lexicon``, in a stable order."""
    terms: dict[str, LexTerm] = {}
    for cid in sorted(lexicon.concepts):
        concept = lexicon.concepts[cid]
        for form in (*concept.surface_forms, *concept.abbreviations):
            terms.setdefault(form.lower(), LexTerm(form, "concept", cid))
    for category in sorted(lexicon.modifiers):
        for value in sorted(lexicon.modifiers[category]):
            for form in lexicon.modifiers[category][value]:
                terms.setdefault(form.lower(), LexTerm(form, "modifier", f"{category}:{value}"))
    for word in (*CONCEPT_TYPES, *POLARITIES):
        terms.setdefault(word, LexTerm(word, "part", word))
    return list(terms.values())


class TermVectors:
    """Unit vectors of a lexicon's terms, looked up by text or searched by similarity."""

    def __init__(self, terms: list[LexTerm], vectors: np.ndarray) -> None:
        self.terms = terms
        self.vectors = vectors
        self._row = {t.text.lower(): i for i, t in enumerate(terms)}
        self._searchable = np.array([t.kind != "part" for t in terms])

    @classmethod
    def for_lexicon(
        cls, lexicon: Lexicon, encoder: Encoder, cache_dir: Path | None = None
    ) -> TermVectors:
        """Load the cached vectors of ``lexicon`` under ``encoder``, computing them on a miss."""
        terms = lexicon_terms(lexicon)
        key = hashlib.sha256(
            "\n".join([encoder.fingerprint, *(f"{t.kind}\t{t.ref}\t{t.text}" for t in terms)])
            .encode()
        ).hexdigest()[:20]
        path = (cache_dir or default_cache_dir()) / f"terms-{key}.npy"
        if path.is_file():
            vectors = np.load(path)
            if vectors.shape[0] == len(terms):
                return cls(terms, vectors)
        vectors = _embed_with_progress(encoder, [t.text for t in terms])
        _save_atomically(path, vectors)
        return cls(terms, vectors)

    def vector(self, text: str) -> np.ndarray | None:
        """The vector of a lexicon term (case-insensitive), or None when it is not one."""
        row = self._row.get(text.lower())
        return None if row is None else self.vectors[row]

    def means(self, patterns: Sequence[Sequence[str]]) -> np.ndarray:
        """For each of ``patterns`` (lists of parts), the unit-length mean of its known parts'
        vectors (zeros when none is known), one row each, computed together."""
        rows = [[self._row[p.lower()] for p in parts if p.lower() in self._row]
                for parts in patterns]
        out = np.zeros((len(rows), self.vectors.shape[1]), dtype=self.vectors.dtype)
        known = [i for i, r in enumerate(rows) if r]
        if known:
            counts = np.array([len(rows[i]) for i in known])
            starts = np.cumsum([0, *counts[:-1]])
            sums = np.add.reduceat(self.vectors[[r for i in known for r in rows[i]]], starts,
                                   axis=0)
            for i, mean in zip(known, sums / counts.astype(self.vectors.dtype)[:, None],
                               strict=True):
                out[i] = mean / max(float(np.linalg.norm(mean)), 1e-12)
        return out

    def nearest(self, vector: np.ndarray, k: int = 3) -> list[tuple[LexTerm, float]]:
        """The ``k`` concept or modifier terms most similar to ``vector`` (cosine), best first."""
        sims = np.where(self._searchable, self.vectors @ vector, -np.inf)
        top = np.argsort(-sims, kind="stable")[:k]
        return [(self.terms[i], float(sims[i])) for i in top]


def _save_atomically(path: Path, vectors: np.ndarray) -> None:
    """Write ``vectors`` to ``path`` through a temporary file, so readers never see half of it
    (a private file, in a private folder when this makes it)."""
    private_folder(path.parent)
    with atomic_path(path, mode=0o600) as tmp, tmp.open("wb") as out:
        np.save(out, vectors)


def _embed_with_progress(encoder: Encoder, texts: list[str]) -> np.ndarray:
    """The vectors of ``texts`` (unit rows), in batches with a progress bar on a terminal: on a
    new machine this takes a minute, once, and a silent minute looks like a hang."""
    from clinsearch.progress import progress_bar, stderr_is_terminal

    parts = []
    with progress_bar(f"embedding the lexicon's {len(texts):,} terms (once per machine)",
                      total=len(texts), enabled=stderr_is_terminal()) as advance:
        for start in range(0, len(texts), TERM_BATCH):
            batch = texts[start : start + TERM_BATCH]
            parts.append(np.asarray(encoder.encode_queries(batch), dtype=np.float32))
            advance(len(batch))
    if not parts:
        return np.asarray(encoder.encode_queries([]), dtype=np.float32)
    return np.concatenate(parts)
