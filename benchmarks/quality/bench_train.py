"""Training benchmark ([Shi2022] Table 1 and 3 setup) on IU X-ray sentences, CPU only.

Unseen-finding 2-fold cross-validation: the weak-label benchmark's findings are split into two
folds sharing no finding; a model is fine-tuned on weak labels of every finding outside the test
fold and ranks a pool of unique IU X-ray sentences for the test fold's "M" / "no M" queries.
Reported: mAP for positive, negative and all queries (mean of the two folds), embedding
separation on the test folds' labelled sentences, training time and peak memory per run
(each run in its own process). Off-the-shelf all-MiniLM-L6-v2 is the baseline.
"Polarity oracle" is the mAP the same ranking would reach if every sentence of the wrong polarity
(no present finding for "M", no ruled-out finding for "no M") were removed: how far learning
negation alone could lift that model, with its ranking of findings unchanged.

Run: ``python -m benchmarks.quality.bench_train [--epochs 2 | --pairs 1024] [--pool 0 --lr 1e-4]``.
Skips with a message when ../shared/data is absent.
"""

from __future__ import annotations

import argparse
import json
import pickle
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from clinsearch.datasets import IU_XRAY, shared_data  # noqa: E402


@dataclass(frozen=True)
class Setup:
    """One trained configuration of Table 1."""

    name: str
    loss: str
    negatives: str
    batch_size: int
    chunk_size: int
    pair_opposites: bool = False
    static: bool = False  # train the static model distilled from MiniLM (models/static.py)
    lr: float | None = None  # None: --lr


SETUPS = (
    Setup("HS/MB(128)", "triplet", "hard", 128, 64),
    Setup("HS/NB(32)", "triplet", "hard", 32, 64),
    Setup("RS/NB(32)", "triplet", "random", 32, 64),
    Setup("listwise/MB(128)", "listwise", "hard", 128, 64),
    Setup("HS/NB(32)+OP", "triplet", "hard", 32, 64, pair_opposites=True),
    Setup("HS/MB(128)+OP", "triplet", "hard", 128, 64, pair_opposites=True),
    # [Shi2022]'s schedule on the static model (train/static.py: lr 0.05, one pass per batch)
    Setup("static HS/MB(128)+OP", "triplet", "hard", 128, 256, pair_opposites=True, static=True,
          lr=0.05),
    Setup("static HS/MB(128)", "triplet", "hard", 128, 256, static=True, lr=0.05),
)


def _sentences(work: Path) -> list:
    """Index IU X-ray into ``work`` and return its sentences with findings."""
    from clinsearch import Index
    from clinsearch.corpus.readers import read_reports
    from clinsearch.train.sources import index_sentences

    csv = shared_data(IU_XRAY)
    index = Index.build(read_reports(csv, "iu-xray", skip_bad=True), work / "index", progress=False)
    return index_sentences(index, progress=False)


def _unique(sentences: Sequence) -> list:
    """One sentence per normalised text (IU reports repeat many sentences)."""
    from clinsearch.train.labels import normalise_text

    seen: dict[str, object] = {}
    for s in sentences:
        seen.setdefault(normalise_text(s.text), s)
    return list(seen.values())


def _train_worker(spec_path: Path) -> None:
    """Child process: train one configuration, write its result JSON next to the spec."""
    from clinsearch.train.biencoder import BiEncoderConfig, train_biencoder
    from clinsearch.train.loop import LoopConfig

    spec = json.loads(spec_path.read_text())
    import torch

    torch.set_num_threads(spec["threads"])
    with open(spec["data"], "rb") as f:
        queries, texts = pickle.load(f)
    setup = Setup(**spec["setup"])
    config = BiEncoderConfig(
        base_model=spec["base"],
        loss=setup.loss,
        negatives=setup.negatives,
        batch_size=setup.batch_size,
        chunk_size=setup.chunk_size,
        pair_opposites=setup.pair_opposites,
        max_seq_length=64,
        loop=LoopConfig(
            epochs=spec["epochs"],
            lr=setup.lr or spec["lr"],
            weight_decay=0.0 if setup.static else 0.01,
            max_steps=spec["steps"],
            seed=spec["seed"],
            checkpoint_every=0,
            progress=False,
        ),
    )
    result = train_biencoder(queries, texts, Path(spec["out"]), config)
    Path(spec["result"]).write_text(
        json.dumps(
            {
                "steps": result.steps,
                "seconds": result.seconds,
                "peak_rss_mb": result.peak_rss_mb,
                "first_loss": result.losses[0],
                "last_loss": result.losses[-1],
            }
        )
    )


def _evaluate(
    model_path: Path | None,
    bench,
    pool: dict[str, str],
    polarities: dict[str, set[str]],
    triples,
    threads: int,
):
    """mAP per query kind, its polarity-oracle mAP and the separation of a model on one fold."""
    import torch

    from clinsearch.evaluate.measures import parse_measure, per_query
    from clinsearch.evaluate.separation import cosine_scorer, separation
    from clinsearch.models.encoder import load_encoder
    from clinsearch.trec import Run

    torch.set_num_threads(threads)
    model = load_encoder(model_path)
    ids = list(pool)
    sent = model.encode_queries([pool[i] for i in ids], batch_size=64)
    qv = model.encode_queries([q.text for q in bench.queries], batch_size=64)
    sims = qv @ sent.T
    scores = {
        q.qid: {ids[j]: float(sims[n, j]) for j in np.argsort(-sims[n])[:1000]}
        for n, q in enumerate(bench.queries)
    }
    kinds = {q.qid: q.kind for q in bench.queries}
    wanted = {"positive": "present", "negative": "absent"}
    oracle = {
        q: {d: s for d, s in ranked.items() if wanted[kinds[q]] in polarities[d]}
        for q, ranked in scores.items()
    }
    out: dict = {}
    for prefix, run in (("", scores), ("oracle_", oracle)):
        ap = per_query(bench.qrels, Run("model", run), [parse_measure("map")])["MAP"]
        for k in ("positive", "negative"):
            out[prefix + k] = float(np.mean([v for q, v in ap.items() if kinds[q] == k]))
        out[prefix + "all"] = float(np.mean(list(ap.values())))
    out["n"] = {k: sum(1 for q in kinds.values() if q == k) for k in ("positive", "negative")}
    sep = separation(triples, cosine_scorer(model))
    out["separation"] = (sep.mean, sep.std, sep.n)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pool", type=int, default=0, help="unique sentences ranked (0: every labelled one)"
    )
    parser.add_argument("--epochs", type=int, default=2, help="full passes over the weak labels")
    parser.add_argument(
        "--pairs", type=int, default=0, help="stop each run after this many pairs (0: no limit)"
    )
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--setups", default=",".join(s.name for s in SETUPS))
    parser.add_argument("--json", type=Path, default=None, help="write all figures here")
    parser.add_argument("--worker", type=Path, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _train_worker(args.worker)
        return
    if shared_data(IU_XRAY) is None:
        print("IU X-ray data not found (../shared/data/iu_xray); skipping the training benchmark")
        return
    from clinsearch.evaluate.bench.weak import labels as weak_labels
    from clinsearch.evaluate.bench.weak import weak_benchmark
    from clinsearch.evaluate.separation import Labelled
    from clinsearch.train.batching import training_queries
    from clinsearch.train.labels import build_labels, usable

    started = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="bench-train-"))
    sentences = _sentences(work)
    labelled = [
        s for s in _unique(sentences) if any(usable(f, ("finding", "disease")) for f in s.findings)
    ]
    rng = random.Random(args.seed)
    pool_sents = rng.sample(labelled, min(args.pool or len(labelled), len(labelled)))
    pool = {s.id: s.text for s in pool_sents}
    polarities = {s.id: {p for p, _ in weak_labels(s.findings)} for s in pool_sents}
    weak = weak_benchmark(((s.id, s.findings) for s in pool_sents), seed=args.seed)
    fold_names = [{n for n, (k, _) in weak.split.items() if k == f} for f in (1, 2)]
    labels = build_labels(sentences)
    print(
        f"sentences {len(sentences)}, unique labelled {len(labelled)}, pool {len(pool)}; "
        f"weak labels: {labels.count('positive')} positive, {labels.count('negative')} negative "
        f"queries, {labels.entries} entries; test queries: {weak.all.summary()} "
        f"(prep {time.perf_counter() - started:.0f} s)",
        flush=True,
    )

    def triples(names: set[str]) -> list:
        return [
            Labelled(s.text, f.name, f.polarity)
            for s in pool_sents
            for f in s.findings
            if f.name in names and usable(f, ("finding", "disease"))
        ]

    rows: dict[str, dict] = {}
    fold_eval = [(weak.folds[k], triples(fold_names[k])) for k in (0, 1)]
    base = [_evaluate(None, b, pool, polarities, t, args.threads) for b, t in fold_eval]
    rows["MiniLM off-the-shelf"] = {"folds": base}
    wanted = [s for s in SETUPS if s.name in args.setups.split(",")]
    static_base = None
    if any(s.static for s in wanted):
        from clinsearch.models.static_distill import distill

        began = time.perf_counter()
        static_base = distill(None, work / "static-base")
        rows["static untrained"] = {"folds": [
            _evaluate(static_base, b, pool, polarities, t, args.threads) for b, t in fold_eval
        ]}
        print(f"static model distilled in {time.perf_counter() - began:.1f} s", flush=True)
    _print(rows)
    for setup in wanted:
        folds, runs = [], []
        for k in (0, 1):
            train_queries = [q for q in labels.queries if q.key.name not in fold_names[k]]
            data = work / f"data-{k}.pkl"
            with open(data, "wb") as f:
                pickle.dump((training_queries(train_queries), labels.texts), f)
            out = work / f"model-{setup.name.replace('/', '_')}-{k}"
            spec = work / f"spec-{k}.json"
            spec.write_text(
                json.dumps(
                    {
                        "setup": asdict(setup),
                        "base": str(static_base) if setup.static else None,
                        "data": str(data),
                        "out": str(out),
                        "result": str(out) + ".json",
                        "lr": args.lr,
                        "seed": args.seed,
                        "epochs": args.epochs,
                        "steps": max(1, args.pairs // setup.batch_size) if args.pairs else None,
                        "threads": args.threads,
                    }
                )
            )
            subprocess.run([sys.executable, __file__, "--worker", str(spec)], check=True)
            runs.append(json.loads(Path(str(out) + ".json").read_text()))
            folds.append(
                _evaluate(out, fold_eval[k][0], pool, polarities, fold_eval[k][1], args.threads)
            )
        rows[setup.name] = {"folds": folds, "runs": runs}
        _print(rows)
        if args.json:
            args.json.write_text(json.dumps(rows, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    print(f"total {time.perf_counter() - started:.0f} s")


def _print(rows: dict[str, dict]) -> None:
    """The Table 1 / Table 3 style summary: fold means, time and memory per run."""
    print(
        "| model | mAP pos | mAP neg | mAP all | polarity oracle pos / neg / all | separation"
        " | train s/run | peak MiB | loss first->last |"
    )
    print("|---|---:|---:|---:|---|---:|---:|---:|---|")
    base = rows["MiniLM off-the-shelf"]["folds"]
    base_all = np.mean([f["all"] for f in base])
    for name, row in rows.items():
        f = row["folds"]
        m = {
            p + k: np.mean([x[p + k] for x in f])
            for p in ("", "oracle_")
            for k in ("positive", "negative", "all")
        }
        sep = np.mean([x["separation"][0] for x in f])
        std = np.mean([x["separation"][1] for x in f])
        runs = row.get("runs", [])
        secs = f"{np.mean([r['seconds'] for r in runs]):.0f}" if runs else "-"
        mem = f"{max(r['peak_rss_mb'] for r in runs):.0f}" if runs else "-"
        loss = (
            (
                f"{np.mean([r['first_loss'] for r in runs]):.3f}->"
                f"{np.mean([r['last_loss'] for r in runs]):.3f}"
            )
            if runs
            else "-"
        )
        print(
            f"| {name} | {m['positive']:.3f} | {m['negative']:.3f} | {m['all']:.3f} "
            f"(x{m['all'] / base_all:.2f}) | {m['oracle_positive']:.3f} / "
            f"{m['oracle_negative']:.3f} / {m['oracle_all']:.3f} | {sep:.2f}±{std:.2f} "
            f"| {secs} | {mem} | {loss} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
