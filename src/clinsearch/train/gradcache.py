"""Gradient caching (Gao et al. 2021) for mega-batches: a large in-batch loss with bounded memory.

Embed the whole mega-batch without a graph, compute the loss and its gradient with respect to
the embeddings, then re-encode one mini-batch at a time with a graph and push that gradient
through. Dropout masks are replayed by restoring the random state of each mini-batch, so the
parameter gradient equals the one a single huge batch would give.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from sentence_transformers import SentenceTransformer


def _embed(model: SentenceTransformer, features: dict[str, object]) -> torch.Tensor:
    """The sentence embeddings of one tokenised mini-batch (the model adds keys, so pass a copy)."""
    return model(dict(features))["sentence_embedding"]


def cached_backward(
    model: SentenceTransformer,
    texts: list[str],
    loss_of: Callable[[torch.Tensor], torch.Tensor],
    *,
    chunk_size: int,
) -> float:
    """Backpropagate ``loss_of(embeddings of texts)`` into ``model`` and return the loss value.

    At most ``chunk_size`` texts hold an autograd graph at once; when all texts fit in one chunk
    this is a plain forward and backward pass.
    """
    features = [
        model.preprocess(texts[i : i + chunk_size]) for i in range(0, len(texts), chunk_size)
    ]
    if len(features) == 1:
        loss = loss_of(_embed(model, features[0]))
        loss.backward()
        return float(loss.detach())
    states: list[torch.Tensor] = []
    cached: list[torch.Tensor] = []
    with torch.no_grad():
        for f in features:
            states.append(torch.get_rng_state())
            cached.append(_embed(model, f))
    embeddings = torch.cat(cached).requires_grad_(True)
    loss = loss_of(embeddings)
    loss.backward()
    assert embeddings.grad is not None
    grads = embeddings.grad.split([len(c) for c in cached])
    for f, state, grad in zip(features, states, grads, strict=True):
        torch.set_rng_state(state)
        _embed(model, f).backward(grad)
    return float(loss.detach())
