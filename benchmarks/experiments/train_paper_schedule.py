"""The papers' training schedules in one command, on a GPU when torch sees one.

1. [Shi2022]: triplet loss, hard in-batch negatives, mega-batches of 128 pairs (gradient
   caching in chunks of 64), 10 epochs, lr 2e-5, on IU X-ray weak labels; scored by the
   unseen-finding 2-fold mAP and separation of ``bench_train.py`` (targets: gain >= +0.15 over
   MiniLM, separation >= 0.40).
2. [CAPR2021]: the self-supervised (entity, section) objective for the same encoder (listwise
   in-batch loss over section passages, ``train/sections.py``), trained on the same IU index;
   its steps, time and loss are printed.

    python benchmarks/experiments/train_paper_schedule.py                  # the full schedule
    python benchmarks/experiments/train_paper_schedule.py --pairs 256 --pool 1500  # a CPU check

``--pairs`` stops each run after that many pairs (a short end-to-end run on a CPU); ``--device``
is passed to every training and encoding process (``CLINSEARCH_DEVICE``). Skips cleanly without
the IU X-ray data.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from clinsearch.datasets import IU_XRAY, shared_data
from clinsearch.models.device import DEVICE_ENV, resolve_device

HERE = Path(__file__).resolve().parent
BENCH_TRAIN = HERE.parent / "bench_train.py"
PAPER_EPOCHS, PAPER_LR, MEGA_BATCH = 10, 2e-5, "HS/MB(128)"


def shi2022(args: argparse.Namespace) -> None:
    """The [Shi2022] schedule through the unseen-finding benchmark (it prints its table)."""
    command = [sys.executable, str(BENCH_TRAIN), "--setups", MEGA_BATCH, "--epochs",
               str(args.epochs), "--lr", str(args.lr), "--pool", str(args.pool),
               "--threads", str(args.threads)]
    if args.pairs:
        command += ["--pairs", str(args.pairs)]
    subprocess.run(command, check=True, env=os.environ | {DEVICE_ENV: args.device})


def capr2021(args: argparse.Namespace, work: Path) -> dict:
    """Train the same encoder on (entity, section) queries of the IU index; what the run did."""
    from clinsearch import Index
    from clinsearch.corpus.readers import read_reports
    from clinsearch.train.biencoder import BiEncoderConfig, train_biencoder
    from clinsearch.train.loop import LoopConfig
    from clinsearch.train.training_data import training_data

    csv = shared_data(IU_XRAY)
    Index.build(read_reports(csv, "iu-xray", skip_bad=True), work / "index", progress=False)
    queries, passages = training_data(work / "index", source="sections", progress=False)
    steps = max(1, args.pairs // 128) if args.pairs else None
    config = BiEncoderConfig(
        loss="listwise", batch_size=128, chunk_size=64, max_seq_length=128,
        loop=LoopConfig(epochs=args.epochs, lr=args.lr, max_steps=steps, checkpoint_every=0,
                        progress=False, device=args.device),
    )
    result = train_biencoder(queries, passages, work / "sections-model", config)
    return {"queries": len(queries), "passages": len(passages), "steps": result.steps,
            "seconds": round(result.seconds, 1), "first_loss": result.losses[0],
            "last_loss": result.losses[-1], "peak_rss_mb": round(result.peak_rss_mb)}


def main() -> int:
    """Run both schedules; 0 on success or a clean skip."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--epochs", type=int, default=PAPER_EPOCHS)
    parser.add_argument("--lr", type=float, default=PAPER_LR)
    parser.add_argument("--pairs", type=int, default=0, help="stop each run after this many"
                        " pairs (0: the whole schedule)")
    parser.add_argument("--pool", type=int, default=0, help="sentences ranked (0: all labelled)")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", choices=("shi2022", "capr2021"), default=None)
    args = parser.parse_args()
    if shared_data(IU_XRAY) is None:
        print("skipped: IU X-ray reports not found")
        return 0
    device = resolve_device(args.device)
    print(f"device {device.name} (training precision {device.train_dtype}); epochs {args.epochs},"
          f" lr {args.lr}, pairs per run {args.pairs or 'all'}", flush=True)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="paper-schedule-") as tmp:
        if args.only in (None, "shi2022"):
            shi2022(args)
        if args.only in (None, "capr2021"):
            print("[CAPR2021] (entity, section) objective:", json.dumps(capr2021(args, Path(tmp))))
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
