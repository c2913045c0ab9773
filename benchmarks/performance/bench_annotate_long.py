"""Annotation time of one very long sentence: whole (the old way) vs in pieces (annotate.pieces).

A run-on "sentence" without a full stop, built from radiology clauses, is annotated at several
lengths, both as one spaCy doc (ConText and modifier attachment compare every pair of cues:
quadratic) and through ``Annotator.annotate`` (cut into pieces: linear). CPU seconds are
printed (steadier than wall time on a shared machine), with the ratio. Pinned to one core.

Run: python -m benchmarks.performance.bench_annotate_long \
    [--lengths 25000,100000,200000] [--no-whole]
"""

from __future__ import annotations

import argparse
import os
import time

CLAUSE = (
    "right lower lobe opacity and no pleural effusion, mild cardiomegaly with possible"
    " pneumonia and the heart is normal in size "
)


def cpu_seconds(work: object) -> tuple[float, object]:
    """CPU time of ``work()`` and its result."""
    start = time.process_time()
    result = work()  # type: ignore[operator]
    return time.process_time() - start, result


def main() -> int:
    """Time both ways at each length and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", default="25000,100000,200000")
    parser.add_argument("--no-whole", action="store_true", help="skip the quadratic baseline")
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
    from clinsearch.annotate.annotator import Annotator

    annotator = Annotator()
    annotator.annotate("Warm up: no pneumothorax.")
    print("| characters | findings | whole doc (CPU s) | in pieces (CPU s) | ratio |")
    print("| ---: | ---: | ---: | ---: | ---: |")
    for length in (int(n) for n in args.lengths.split(",")):
        text = (CLAUSE * (length // len(CLAUSE) + 1))[:length]
        pieces_s, findings = cpu_seconds(lambda t=text: annotator.annotate(t))
        whole = "-"
        ratio = "-"
        if not args.no_whole:
            whole_s, old = cpu_seconds(
                lambda t=text: next(annotator._annotate_pieces([(t, ())], 1)))
            same = sum(a == b for a, b in zip(old, findings, strict=False))  # type: ignore[call-overload]
            whole = f"{whole_s:.2f} ({same:,} same findings)"
            ratio = f"{whole_s / pieces_s:.1f}x"
        print(f"| {length:,} | {len(findings):,} | {whole} | {pieces_s:.2f} | {ratio} |",  # type: ignore[arg-type]
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
