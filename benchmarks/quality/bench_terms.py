"""Term encoder benchmark ([SyedaMahmood2021] 3.3): do unseen terms land next to their synonyms?

A fifth of each concept's surface forms (from the shipped lexicon) is held out; the encoder is
trained with SupCon on the rest; for every held-out term and for a misspelt copy of it (one
inner letter dropped) we check whether its nearest known term belongs to the same concept.
Off-the-shelf all-MiniLM-L6-v2 is the baseline. Needs no shared data.

Run: ``python -m benchmarks.quality.bench_terms [--epochs 3 --threads 1]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))


def _misspelt(term: str) -> str:
    """The term with the middle letter of its longest word removed (a common typo)."""
    words = term.split()
    i = max(range(len(words)), key=lambda n: len(words[n]))
    w = words[i]
    if len(w) > 4:
        words[i] = w[: len(w) // 2] + w[len(w) // 2 + 1 :]
    return " ".join(words)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import torch

    from clinsearch.annotate.lexicon import Lexicon
    from clinsearch.train.loop import LoopConfig
    from clinsearch.train.terms import (
        SynonymGroup,
        TermConfig,
        hold_out_terms,
        load_term_encoder,
        nearest_synonym_accuracy,
        synonym_groups,
        train_term_encoder,
    )

    torch.set_num_threads(args.threads)
    groups = synonym_groups(Lexicon.load())
    known, probes = hold_out_terms(groups, 0.2, args.seed)
    typos = [SynonymGroup(g.concept, tuple(_misspelt(t) for t in g.terms)) for g in probes]
    n_known = sum(len(g.terms) for g in known)
    n_probe = sum(len(g.terms) for g in probes)
    print(f"{len(groups)} concepts, {n_known} known terms, {n_probe} held-out terms")
    rows = []
    base = load_term_encoder(None)
    rows.append(
        (
            "MiniLM off-the-shelf",
            nearest_synonym_accuracy(base, known, probes),
            nearest_synonym_accuracy(base, known, typos),
            "-",
            "-",
        )
    )
    with tempfile.TemporaryDirectory() as tmp:
        config = TermConfig(
            loop=LoopConfig(
                epochs=args.epochs, lr=args.lr, seed=args.seed, checkpoint_every=0, progress=False
            )
        )
        started = time.perf_counter()
        result = train_term_encoder(known, Path(tmp) / "terms", config)
        seconds = time.perf_counter() - started
        trained = load_term_encoder(Path(tmp) / "terms")
        rows.append(
            (
                f"SupCon fine-tuned ({args.epochs} epochs, {result.steps} steps)",
                nearest_synonym_accuracy(trained, known, probes),
                nearest_synonym_accuracy(trained, known, typos),
                f"{seconds:.0f}",
                f"{result.peak_rss_mb:.0f}",
            )
        )
    print("| encoder | held-out term top-1 | misspelt term top-1 | train s | peak MiB |")
    print("|---|---:|---:|---:|---:|")
    for name, acc, typo, secs, mem in rows:
        print(f"| {name} | {acc:.3f} | {typo:.3f} | {secs} | {mem} |")


if __name__ == "__main__":
    main()
