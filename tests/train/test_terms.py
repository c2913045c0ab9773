"""Term encoder: synonym groups from a lexicon, SupCon training, load_term_encoder."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from clinsearch.annotate.lexicon import Lexicon
from clinsearch.train.loop import LoopConfig
from clinsearch.train.terms import (
    SynonymGroup,
    TermConfig,
    TermEncoder,
    hold_out_terms,
    load_term_encoder,
    synonym_groups,
    term_batches,
)
from clinsearch.train.terms import train_term_encoder as train

GROUPS = [
    SynonymGroup("pneumothorax", ("pneumothorax", "ptx", "collapsed lung", "air in pleural space")),
    SynonymGroup(
        "cardiomegaly",
        ("cardiomegaly", "enlarged heart", "heart enlargement", "enlarged cardiac silhouette"),
    ),
    SynonymGroup(
        "pleural_effusion",
        ("pleural effusion", "effusion", "fluid in pleural space", "pleural fluid"),
    ),
    SynonymGroup(
        "atelectasis", ("atelectasis", "atelectatic change", "volume loss", "subsegmental collapse")
    ),
]


def _leave_one_out(encoder: TermEncoder) -> float:
    """Share of terms whose nearest other term is a synonym."""
    vocab = [(g.concept, t) for g in GROUPS for t in g.terms]
    emb = encoder.encode([t for _, t in vocab])
    sims = emb @ emb.T
    np.fill_diagonal(sims, -1)
    return float(
        np.mean([vocab[j][0] == c for (c, _), j in zip(vocab, sims.argmax(1), strict=True)])
    )


def test_groups_from_the_shipped_lexicon() -> None:
    groups = synonym_groups(Lexicon.load())
    assert len(groups) >= 100
    assert all(g.terms == tuple(dict.fromkeys(g.terms)) for g in groups)
    assert sum(len(g.terms) for g in groups) > 1000


def test_batches_cover_every_term_once_with_positives() -> None:
    config = TermConfig(batch_size=6, terms_per_group=2)
    batches = term_batches(GROUPS, config, seed=3)
    seen = sorted(t for b in batches for t in b.terms)
    assert seen == sorted(t for g in GROUPS for t in g.terms)
    for b in batches:
        assert len(b.terms) == len(b.labels)


def test_hold_out_keeps_one_known_term_per_group() -> None:
    known, probes = hold_out_terms(GROUPS, 0.5, seed=0)
    assert [len(g.terms) for g in known] == [2, 2, 2, 2]
    assert sum(len(g.terms) for g in probes) == 8


def test_training_lowers_the_loss_and_the_encoder_loads(
    tmp_path: Path, tiny_encoder_path: Path
) -> None:
    config = TermConfig(
        base_model=str(tiny_encoder_path),
        batch_size=16,
        terms_per_group=4,
        loop=LoopConfig(epochs=100, lr=3e-3, progress=False, checkpoint_every=0),
    )
    out = tmp_path / "terms"
    before = _leave_one_out(load_term_encoder(tiny_encoder_path))
    result = train(GROUPS, out, config)
    first, last = np.mean(result.losses[:5]), np.mean(result.losses[-5:])
    assert last < first
    encoder = load_term_encoder(out)
    vectors = encoder.encode(["PTX", "an unseen wordd"])
    assert vectors.shape == (2, 32) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # most terms' nearest other term is now a synonym (leave-one-out over the training groups)
    after = _leave_one_out(encoder)
    assert after >= 0.85 and after > before
