"""BioScope radiology: polarity of finding mentions under negation and speculation scopes.

Items, classes and the convention differences are defined in ``clinsearch.evaluate.bioscope``
(docs: README, "What a finding counts as"). Prints accuracy and per-class precision, recall and
F1 for clinsearch and for medspaCy's default ConText on the same mentions, on every item and on
the items outside the convention differences, for the tuning half, the held-out half and both;
then how many items each convention difference holds, and (``--errors N``) clinsearch's errors
on the tuning half (rules are chosen on that half only). ``--record`` puts each method's
accuracy, negated F1 and speculated recall (both halves), and clinsearch's on the held-out half,
in benchmarks/figures.yaml.

Run: python -m benchmarks.quality.bench_bioscope [--errors N] [--record]
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
    Scores,
    items,
    medspacy_predictions,
    read_sentences,
    score,
)

COMMAND = "python -m benchmarks.quality.bench_bioscope --record"


def scores(found: Sequence[Item], predicted: Sequence[str]) -> dict[tuple[str, str], Scores]:
    """A method's scores per (half, subset): each half and both, all items and outside
    conventions."""
    out = {}
    for half in (*HALVES, "both"):
        for subset in ("all", "outside conventions"):
            out[half, subset] = score(
                (i.gold, p) for i, p in zip(found, predicted, strict=True)
                if (half == "both" or i.half == half) and (subset == "all" or not i.convention))
    return out


def rows(label: str, method: dict[tuple[str, str], Scores]) -> list[str]:
    """Table rows of one method's scores."""
    out = []
    for (half, subset), s in method.items():
        per_class = " | ".join(
            f"{s.classes[c].precision:.3f} | {s.classes[c].recall:.3f} | {s.classes[c].f1:.3f}"
            for c in CLASSES)
        out.append(f"| {label} | {half} | {subset} | {s.items} | {s.accuracy:.3f} | {per_class} |")
    return out


def record_figures(ours: dict[tuple[str, str], Scores], theirs: dict[tuple[str, str], Scores],
                   mentions: int) -> None:
    """Each method's figures on both halves, and clinsearch's on the held-out half."""
    from benchmarks.figures import record

    corpus = f"CMC 2007 BioScope dev, {mentions:,} mentions"
    outside, held = ours["both", "outside conventions"], ours["held-out", "all"]
    notes = {"accuracy": f"{outside.accuracy:.3f} outside convention differences;"
                         f" held-out half {held.accuracy:.3f}",
             "negated-f1": f"{outside.classes['negated'].f1:.3f} outside convention differences"}
    for key, label, method, scored in (
            ("clinsearch", "clinsearch", "clinsearch", ours),
            ("medspacy", "medspaCy default ConText", "medspaCy default", theirs)):
        both = scored["both", "all"]
        for name, figure, value, series in (
                ("accuracy", "BioScope polarity accuracy", both.accuracy,
                 "BioScope polarity (accuracy)"),
                ("negated-f1", "BioScope negated F1", both.classes["negated"].f1,
                 "BioScope negated (F1)"),
                ("speculated-recall", "BioScope speculated recall",
                 both.classes["speculated"].recall, "BioScope speculated (recall)")):
            note = {"note": notes[name]} if scored is ours and name in notes else {}
            record(f"bioscope.{name}.{key}", round(value, 3), command=COMMAND, group="quality",
                   figure=f"{figure}, {label}", corpus=corpus, method=method, series=series,
                   **note)
    corpus = f"CMC 2007 BioScope dev, held-out half, {held.items:,} mentions"
    record("bioscope.held-out.accuracy.clinsearch", round(held.accuracy, 3), command=COMMAND,
           group="quality", figure="BioScope polarity accuracy, held-out half, clinsearch",
           corpus=corpus, note="rules are chosen on the tuning half only")
    record("bioscope.held-out.speculated-recall.clinsearch",
           round(held.classes["speculated"].recall, 3), command=COMMAND, group="quality",
           figure="BioScope speculated recall, held-out half, clinsearch", corpus=corpus)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--errors", type=int, default=0, help="show N errors of the tuning half")
    parser.add_argument("--record", action="store_true",
                        help="put the figures in benchmarks/figures.yaml")
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
    ours = scores(found, [i.predicted for i in found])
    theirs = scores(found, baseline)
    for line in rows("clinsearch", ours) + rows("medspaCy default ConText", theirs):
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
    if args.record:
        record_figures(ours, theirs, len(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
