"""Term encoder ([SyedaMahmood2021] 3.3): contrastive learning over the lexicon's synonym lists.

The paper encodes each vocabulary term as a one-hot vector, so a word outside the vocabulary
cannot be embedded. Here a subword sentence encoder (all-MiniLM-L6-v2 by default) is fine-tuned
on the terms' text with the supervised contrastive loss (temperature 0.05): a concept's surface
forms are positives for each other, every other term in the batch is a negative. Unseen words
and misspellings then still land near their clinical synonyms.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from clinsearch.annotate.lexicon import Lexicon
from clinsearch.errors import DataError
from clinsearch.models.base_models import load_sentence_model, save_sentence_model
from clinsearch.models.device import to_device
from clinsearch.train.loop import LoopConfig, LoopResult, train_loop
from clinsearch.train.losses import supcon_loss


@dataclass(frozen=True, slots=True)
class SynonymGroup:
    """A concept and its clinically synonymous surface forms (lower case, distinct)."""

    concept: str
    terms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class TermConfig:
    """Term encoder settings; temperature 0.05 as in [SyedaMahmood2021]."""

    base_model: str | None = None
    temperature: float = 0.05
    batch_size: int = 128  # terms per batch
    terms_per_group: int = 4  # a group's terms travel in pieces of this size, so each has positives
    max_seq_length: int = 24
    loop: LoopConfig = field(default_factory=lambda: LoopConfig(epochs=10, lr=5e-5))


@dataclass(frozen=True, slots=True)
class TermBatch:
    """Terms and the group each belongs to."""

    terms: list[str]
    labels: torch.Tensor


def synonym_groups(lexicon: Lexicon) -> list[SynonymGroup]:
    """One group per concept: its name, terms and abbreviations, lower-cased, without repeats."""
    groups = []
    for concept in sorted(lexicon.concepts.values(), key=lambda c: c.id):
        forms = (*concept.surface_forms, *concept.abbreviations)
        terms = tuple(dict.fromkeys(f.strip().lower() for f in forms if f.strip()))
        if terms:
            groups.append(SynonymGroup(concept.id, terms))
    return groups


def term_batches(groups: Sequence[SynonymGroup], config: TermConfig, seed: int) -> list[TermBatch]:
    """One epoch: every term once, groups cut into shuffled pieces, pieces packed into batches."""
    rng = random.Random(seed)
    pieces: list[tuple[int, list[str]]] = []
    for index, group in enumerate(groups):
        terms = list(group.terms)
        rng.shuffle(terms)
        size = config.terms_per_group
        pieces.extend((index, terms[i : i + size]) for i in range(0, len(terms), size))
    rng.shuffle(pieces)
    batches: list[TermBatch] = []
    terms: list[str] = []
    labels: list[int] = []
    for index, piece in pieces:
        terms.extend(piece)
        labels.extend([index] * len(piece))
        if len(terms) >= config.batch_size:
            batches.append(TermBatch(terms, torch.tensor(labels)))
            terms, labels = [], []
    if len(terms) > 1:
        batches.append(TermBatch(terms, torch.tensor(labels)))
    return batches


def train_term_encoder(
    groups: Sequence[SynonymGroup],
    out: Path,
    config: TermConfig = TermConfig(),
) -> LoopResult:
    """Fine-tune a subword encoder so synonyms cluster (SupCon); save it at ``out``."""
    model = load_sentence_model(
        config.base_model, max_seq_length=config.max_seq_length, device=config.loop.device
    )

    def batches(epoch: int) -> list[TermBatch]:
        return term_batches(groups, config, config.loop.seed + epoch)

    def step(batch: TermBatch) -> float:
        features = to_device(model.preprocess(batch.terms), model.device)
        embeddings = model(features)["sentence_embedding"]
        loss = supcon_loss(embeddings, batch.labels, temperature=config.temperature)
        loss.backward()
        return float(loss.detach())

    meta = {
        "kind": "terms",
        **{k: v for k, v in asdict(config).items() if k != "loop"},
        "groups": len(groups),
        "terms": sum(len(g.terms) for g in groups),
    }
    return train_loop(model, batches, step, config.loop, out,
                      lambda f: save_sentence_model(model, f, meta), meta)


@dataclass
class TermEncoder:
    """Embeds clinical terms (any text, seen or not) as unit vectors; used by concept search."""

    model: SentenceTransformer

    def encode(self, terms: list[str]) -> np.ndarray:
        """Unit-length float32 vectors, one row per term (terms are lower-cased first)."""
        vectors = self.model.encode(
            [t.lower() for t in terms],
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32).reshape(len(terms), -1)


def load_term_encoder(path: str | Path | None = None, *, device: str | None = None) -> TermEncoder:
    """The term encoder saved at ``path`` by ``clinsearch train terms`` (None: untrained MiniLM),
    on ``device`` (default: the process-wide choice)."""
    return TermEncoder(
        load_sentence_model(path, max_seq_length=TermConfig().max_seq_length, device=device)
    )


def nearest_synonym_accuracy(
    encoder: TermEncoder, known: Sequence[SynonymGroup], probes: Sequence[SynonymGroup]
) -> float:
    """Share of probe terms whose nearest known term belongs to the probe's own concept."""
    vocab = [(g.concept, t) for g in known for t in g.terms]
    queries = [(g.concept, t) for g in probes for t in g.terms]
    if not vocab or not queries:
        raise DataError("term accuracy needs known terms and probe terms")
    known_vectors = encoder.encode([t for _, t in vocab])
    probe_vectors = encoder.encode([t for _, t in queries])
    nearest = (probe_vectors @ known_vectors.T).argmax(axis=1)
    hits = sum(vocab[j][0] == c for (c, _), j in zip(queries, nearest, strict=True))
    return hits / len(queries)


def hold_out_terms(
    groups: Sequence[SynonymGroup], fraction: float, seed: int
) -> tuple[list[SynonymGroup], list[SynonymGroup]]:
    """Split each group's terms into known ones and held-out probes (a group keeps at least one)."""
    rng = random.Random(seed)
    known, probes = [], []
    for group in groups:
        terms = list(group.terms)
        rng.shuffle(terms)
        k = min(len(terms) - 1, round(len(terms) * fraction))
        known.append(SynonymGroup(group.concept, tuple(terms[k:])))
        if k > 0:
            probes.append(SynonymGroup(group.concept, tuple(terms[:k])))
    return known, probes
