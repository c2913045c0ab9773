"""Annotation throughput: sentences per second on one core over IU X-ray sentences.

The process is pinned to one CPU core; both wall-clock and CPU-time rates are printed (on a shared
machine the CPU-time rate is the steadier figure). Uses the shipped chest X-ray lexicon.

Run: python -m benchmarks.performance.bench_annotate_speed [--sentences N] [--batch-size B]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from clinsearch.datasets import IU_XRAY, shared_data


def main() -> int:
    """Annotate IU X-ray sentences in batches and print the rates."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=20000, help="sentences to annotate")
    parser.add_argument("--batch-size", type=int, default=256)
    args = parser.parse_args()
    path = shared_data(IU_XRAY)
    if path is None:
        print("IU X-ray reports not found (../shared/data/iu_xray); skipping.")
        return 0
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.corpus.readers import read_reports
    from clinsearch.corpus.segment import Segmenter

    start = time.perf_counter()
    annotator = Annotator()
    build = time.perf_counter() - start
    segmenter = Segmenter()
    sentences = [
        s.text
        for seg in segmenter.segment_many(read_reports(path, "iu-xray", skip_bad=True))
        for s in seg.sentences
    ][: args.sentences]
    list(annotator.annotate_many(sentences[:200]))  # warm up caches
    wall, cpu = time.perf_counter(), time.process_time()
    findings = sum(len(f) for f in annotator.annotate_many(sentences, batch_size=args.batch_size))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    n = len(sentences)
    concepts = len(annotator.lexicon.concepts)
    print(f"annotator build: {build:.1f} s (shipped lexicon, {concepts} concepts)")
    print("| sentences | findings | wall s | sentences/s (wall) | CPU s | sentences/s (CPU) |")
    print("| --- | --- | --- | --- | --- | --- |")
    print(f"| {n} | {findings} | {wall:.1f} | {n / wall:.0f} | {cpu:.1f} | {n / cpu:.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
