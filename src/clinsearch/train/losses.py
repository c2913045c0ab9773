"""In-batch losses: triplet ([Shi2022]), listwise ([CAPR2021]), SupCon ([SyedaMahmood2021]).

Every loss takes raw embeddings and normalises them itself, so cosine similarity is a dot product
and gradient caching can differentiate with respect to the raw embeddings.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F

from clinsearch.errors import InputError

NegativeSampling = Literal["hard", "random"]  # hardest in-batch negative, or a random one


def triplet_loss(
    queries: torch.Tensor,
    sentences: torch.Tensor,
    matches: torch.Tensor,
    *,
    margin: float = 0.5,
    negatives: NegativeSampling = "hard",
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Triplet loss with cosine distance: ``max(d(q, m) - d(q, u) + margin, 0)``, mean over queries.

    ``sentences[i]`` is the matched sentence of ``queries[i]``; ``matches[i, j]`` is True when
    sentence ``j`` also matches query ``i`` and so may never be its negative (false-negative
    masking). The negative ``u`` is the most similar unmatched sentence (``"hard"``) or a random
    one (``"random"``). Queries without any unmatched sentence in the batch are left out.
    """
    q = F.normalize(queries, dim=-1)
    s = F.normalize(sentences, dim=-1)
    sims = q @ s.T
    allowed = ~matches.to(sims.device)
    valid = allowed.any(dim=1)
    if not bool(valid.any()):
        return sims.sum() * 0.0
    positive = sims.diagonal()
    if negatives == "hard":
        negative = sims.masked_fill(~allowed, float("-inf")).max(dim=1).values
    elif negatives == "random":
        weights = allowed.float() + (~valid).float().unsqueeze(1)  # rows without negatives: any
        pick = torch.multinomial(weights, 1, generator=generator).squeeze(1)
        negative = sims.gather(1, pick.unsqueeze(1)).squeeze(1)
    else:
        raise InputError(
            f"unknown negative sampling {negatives!r} (hard or random)", field="negatives"
        )
    # cosine distance d = 1 - cos, so d(q, m) - d(q, u) = cos(q, u) - cos(q, m)
    losses = torch.relu(negative - positive + margin)
    return losses[valid].mean()


def listwise_loss(
    queries: torch.Tensor,
    sentences: torch.Tensor,
    matches: torch.Tensor,
    *,
    scale: float = 20.0,
) -> torch.Tensor:
    """Listwise in-batch softmax cross-entropy ([CAPR2021]): own sentence against the others.

    Other sentences that also match the query (``matches``) are removed from its softmax rather
    than being pushed away.
    """
    q = F.normalize(queries, dim=-1)
    s = F.normalize(sentences, dim=-1)
    return listwise_scores_loss(q @ s.T, matches, scale=scale)


def listwise_scores_loss(
    scores: torch.Tensor, matches: torch.Tensor, *, scale: float = 20.0
) -> torch.Tensor:
    """The listwise loss on a ``(queries, sentences)`` score matrix whose diagonal holds each
    query's own sentence (any scorer: dot products, a poly-encoder's attention scores)."""
    logits = scores.float() * scale
    eye = torch.eye(len(logits), dtype=torch.bool, device=logits.device)
    logits = logits.masked_fill(matches.to(logits.device) & ~eye, float("-inf"))
    target = torch.arange(len(logits), device=logits.device)
    return F.cross_entropy(logits, target)


def supcon_loss(
    embeddings: torch.Tensor, labels: torch.Tensor, *, temperature: float = 0.05
) -> torch.Tensor:
    """Supervised contrastive loss (Khosla et al. 2020; [SyedaMahmood2021] eq. 1-2), anchor mean.

    Members of an anchor's label group are its positives; every other item in the batch is in the
    denominator. Anchors with no positive in the batch are left out.
    """
    z = F.normalize(embeddings, dim=-1)
    logits = (z @ z.T) / temperature
    eye = torch.eye(len(z), dtype=torch.bool, device=z.device)
    logits = logits.masked_fill(eye, float("-inf"))
    log_prob = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    labels = labels.to(z.device)
    positives = (labels.unsqueeze(0) == labels.unsqueeze(1)) & ~eye
    counts = positives.sum(dim=1)
    has = counts > 0
    if not bool(has.any()):
        return z.sum() * 0.0
    per_anchor = -(log_prob.masked_fill(~positives, 0.0).sum(dim=1)[has] / counts[has])
    return per_anchor.mean()
