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

from clinsearch.models.device import to_device


def _embed(model: SentenceTransformer, features: dict[str, object]) -> torch.Tensor:
    """The sentence embeddings of one tokenised mini-batch (the model adds keys, so pass a copy
    with its tensors on the model's device)."""
    return model(to_device(features, model.device))["sentence_embedding"]


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
    states: list[tuple[torch.Tensor, torch.Tensor | None]] = []
    cached: list[torch.Tensor] = []
    with torch.no_grad():
        for f in features:
            states.append(_rng_state(model.device))
            cached.append(_embed(model, f))
    embeddings = torch.cat(cached).requires_grad_(True)
    loss = loss_of(embeddings)
    loss.backward()
    assert embeddings.grad is not None
    grads = embeddings.grad.split([len(c) for c in cached])
    for f, state, grad in zip(features, states, grads, strict=True):
        _set_rng_state(model.device, state)
        _embed(model, f).backward(grad)
    return float(loss.detach())


def _rng_state(device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The random state dropout draws from: the CPU's, and the GPU's when the model is on one."""
    gpu = torch.cuda.get_rng_state(device) if device.type == "cuda" else None
    return torch.get_rng_state(), gpu


def _set_rng_state(device: torch.device, state: tuple[torch.Tensor, torch.Tensor | None]) -> None:
    """Restore a state from ``_rng_state``, so a re-encoded chunk replays its dropout masks."""
    torch.set_rng_state(state[0])
    if state[1] is not None:
        torch.cuda.set_rng_state(state[1], device)
