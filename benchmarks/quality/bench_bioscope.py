"""BioScope radiology: polarity of finding mentions under negation and speculation scopes.

Items, classes and the convention differences are defined in ``clinsearch.evaluate.bioscope``
(docs: README, "What a finding counts as"). Prints accuracy and per-class precision, recall and
F1 for clinsearch and for medspaCy's default ConText on the same mentions, on every item and on
the items outside the convention differences, for the tuning half, the held-out half and both;
then how many items each convention difference holds, and (``--errors N``) clinsearch's errors
on the tuning half (rules are chosen on that half only).

Run: python benchmarks/quality/bench_bioscope.py [--errors N]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Sequence

from clinsearch.annotate.annotator import Annotator
from clinsearch.datasets import BIOSCOPE_DEV, shared_data
from clinsearch.evaluate.bioscope import (
    CLASSES,
    CONVENTIONS,
    HALVES,
    Item,
    items,
    medspacy_predictions,
    read_sentences,
    score,
)


def rows(label: str, found: Sequence[Item], predicted: Sequence[str]) -> list[str]:
    """Table rows of one method: each half and both, all items and outside conventions."""
    out = []
    for half in (*HALVES, "both"):
        for subset in ("all", "outside conventions"):
            pairs = [(i.gold, p) for i, p in zip(found, predicted, strict=True)
                     if (half == "both" or i.half == half)
                     and (subset == "all" or not i.convention)]
            s = score(pairs)
            per_class = " | ".join(
                f"{s.classes[c].precision:.3f} | {s.classes[c].recall:.3f} | {s.classes[c].f1:.3f}"
                for c in CLASSES)
            out.append(
                f"| {label} | {half} | {subset} | {s.items} | {s.accuracy:.3f} | {per_class} |")
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--errors", type=int, default=0, help="show N errors of the tuning half")
    args = parser.parse_args()
    path = shared_data(BIOSCOPE_DEV)
    if path is None:
        print(f"skipped: BioScope dev file not found (../shared/data/{BIOSCOPE_DEV})")
        return 0
    sentences = read_sentences(path)
    start = time.process_time()
    found = items(sentences, Annotator())
    ours_s = time.process_time() - start
    start = time.process_time()
    baseline = medspacy_predictions(found)
    base_s = time.process_time() - start
    print(f"BioScope dev: {len(sentences)} sentences, {len(found)} finding mentions"
          f" (clinsearch {ours_s:.1f} CPU s, medspaCy {base_s:.1f} CPU s)\n")
    head = " | ".join(f"P {c[:4]} | R {c[:4]} | F1 {c[:4]}" for c in CLASSES)
    print(f"| method | half | items | n | accuracy | {head} |")
    print("|" + " --- |" * (5 + 3 * len(CLASSES)))
    for line in (rows("clinsearch", found, [i.predicted for i in found])
                 + rows("medspaCy default ConText", found, baseline)):
        print(line)
    counts = Counter(i.convention for i in found if i.convention)
    print("\nconvention differences (items flagged, both halves):")
    for name, why in CONVENTIONS.items():
        print(f"- {name}: {counts[name]} ({why})")
    errors = [i for i in found if i.half == HALVES[0] and i.gold != i.predicted
              and not i.convention]
    print(f"\nclinsearch errors outside conventions, tuning half: {len(errors)}")
    for item in errors[: args.errors]:
        trigger = item.finding.trigger
        cue = f' by "{trigger.text}" ({trigger.rule})' if trigger else ""
        print(f"- {item.gold} -> {item.predicted}{cue}: [{item.finding.text}]"
              f" {item.sentence.text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
