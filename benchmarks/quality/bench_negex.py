"""NegEx test set: negation of each row's condition, clinsearch vs negspacy vs medspaCy defaults.

Each row's Condition is passed as a target. Gold Affirmed -> present, Negated -> absent,
Possible -> uncertain. Prints accuracy (3-class and negated-vs-not) and precision / recall / F1 of
the negated class for every method, then examples of clinsearch's remaining errors, and the
precision and recall of clinsearch's historical flag against the set's temporality column.

Run: python -m benchmarks.quality.bench_negex [--errors N]
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from clinsearch.datasets import NEGEX, shared_data

GOLD = {"affirmed": "present", "negated": "absent", "possible": "uncertain"}


@dataclass(frozen=True)
class Row:
    """One NegEx test row."""

    line: int
    condition: str
    sentence: str
    gold: str
    historical: bool  # the temporality column says Historical


def read_rows(path: Path) -> list[Row]:
    """The NegEx test rows (tab-separated: number, condition, sentence, status, ...)."""
    with path.open(encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        next(reader)
        return [
            Row(i, r[1], r[2], GOLD[r[3].strip().lower()], r[4].strip().lower() == "historical")
            for i, r in enumerate(reader, start=2)
        ]


def squeeze(text: str) -> str:
    """Whitespace runs collapsed, as the baselines' tokenizers keep them as tokens."""
    return " ".join(text.split())


def clinsearch_method(radiology_rules: bool) -> Callable[[Row], str]:
    """clinsearch's Annotator with the condition as a target."""
    finding = clinsearch_finding(radiology_rules)

    def predict(row: Row) -> str:
        found = finding(row)
        return found.polarity if found else "present"

    return predict


def clinsearch_finding(radiology_rules: bool) -> Callable[[Row], Any]:
    """The Finding clinsearch's Annotator gives a row's condition (None if not found)."""
    from clinsearch.annotate.annotator import TARGET_TYPE, Annotator
    from clinsearch.annotate.lexicon import Lexicon

    empty = Lexicon(name="none", version="", concepts={})
    annotator = Annotator(empty, radiology_rules=radiology_rules)

    def finding(row: Row) -> Any:
        found = annotator.annotate(row.sentence, [row.condition])
        return next((f for f in found if f.type == TARGET_TYPE), None)

    return finding


def historical_scores(rows: list[Row]) -> tuple[float, float, int]:
    """Precision and recall of clinsearch's historical flag, and the gold historical rows."""
    finding = clinsearch_finding(True)
    said = [bool((f := finding(r)) and "historical" in f.context) for r in rows]
    hits = sum(s and r.historical for s, r in zip(said, rows, strict=True))
    gold = sum(r.historical for r in rows)
    return hits / max(1, sum(said)), hits / max(1, gold), gold


def _target_span(nlp, doc, condition: str):
    """The condition's first case-insensitive occurrence in ``doc`` (baselines), or None."""
    from spacy.matcher import PhraseMatcher

    matcher = PhraseMatcher(nlp.vocab, attr="LOWER")
    matcher.add("T", [nlp.make_doc(squeeze(condition))])
    spans = matcher(doc, as_spans=True)
    return spans[0] if spans else None


def medspacy_method() -> Callable[[Row], str]:
    """medspaCy defaults: its tokenizer, PyRuSH sentences and default ConText rules."""
    import logging

    import medspacy

    logging.getLogger("PyRuSH").setLevel(logging.WARNING)
    try:
        from loguru import logger

        logger.remove()
    except ImportError:
        pass
    nlp = medspacy.load(
        medspacy_enable=["medspacy_tokenizer", "medspacy_pyrush", "medspacy_context"]
    )
    pipes = [proc for _, proc in nlp.pipeline]

    def predict(row: Row) -> str:
        doc = nlp.make_doc(squeeze(row.sentence))
        span = _target_span(nlp, doc, row.condition)
        if span is None:
            return "present"
        doc.ents = [span]
        for proc in pipes:
            doc = proc(doc)
        if span._.is_negated:
            return "absent"
        return "uncertain" if span._.is_uncertain else "present"

    return predict


def negspacy_method() -> Callable[[Row], str]:
    """negspacy's Negex (en_clinical termset) over a spaCy sentencizer."""
    import spacy
    from negspacy.negation import Negex  # noqa: F401  (registers the factory)

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("negex")
    pipes = [proc for _, proc in nlp.pipeline]

    def predict(row: Row) -> str:
        doc = nlp.make_doc(squeeze(row.sentence))
        span = _target_span(nlp, doc, row.condition)
        if span is None:
            return "present"
        doc.ents = [span]
        for proc in pipes:
            doc = proc(doc)
        return "absent" if doc.ents[0]._.negex else "present"

    return predict


@dataclass(frozen=True)
class Scores:
    """Accuracy and negated-class precision / recall / F1."""

    accuracy: float
    binary_accuracy: float
    precision: float
    recall: float
    f1: float
    seconds: float


def score(gold: list[str], pred: list[str], seconds: float) -> Scores:
    """Scores of predictions against gold polarities."""
    tp = sum(g == "absent" and p == "absent" for g, p in zip(gold, pred, strict=True))
    fp = sum(g != "absent" and p == "absent" for g, p in zip(gold, pred, strict=True))
    fn = sum(g == "absent" and p != "absent" for g, p in zip(gold, pred, strict=True))
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    n = len(gold)
    acc = sum(g == p for g, p in zip(gold, pred, strict=True)) / n
    bin_acc = sum((g == "absent") == (p == "absent") for g, p in zip(gold, pred, strict=True)) / n
    return Scores(acc, bin_acc, precision, recall, f1, seconds)


def main() -> int:
    """Run every method over the NegEx test set and print the comparison table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--errors", type=int, default=12, help="clinsearch errors to print")
    args = parser.parse_args()
    path = shared_data(NEGEX)
    if path is None:
        print("NegEx test set not found (../shared/data/negex); skipping.")
        return 0
    rows = read_rows(path)
    gold = [r.gold for r in rows]
    methods: dict[str, Callable[[], Callable[[Row], str]]] = {
        "clinsearch (medspaCy ConText + radiology rules)": lambda: clinsearch_method(True),
        "clinsearch, medspaCy default rules only": lambda: clinsearch_method(False),
        "medspaCy defaults (PyRuSH + ConText)": medspacy_method,
        "negspacy (Negex, en_clinical)": negspacy_method,
    }
    results: dict[str, tuple[Scores, list[str]]] = {}
    for name, make in methods.items():
        predict = make()
        start = time.process_time()
        pred = [predict(r) for r in rows]
        results[name] = (score(gold, pred, time.process_time() - start), pred)
    print(f"NegEx test set: {len(rows)} rows, {gold.count('absent')} negated\n")
    print("| method | acc. (3-class) | acc. (negated or not) | P neg | R neg | F1 neg | CPU s |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, (s, _) in results.items():
        print(
            f"| {name} | {s.accuracy:.3f} | {s.binary_accuracy:.3f} | {s.precision:.3f} "
            f"| {s.recall:.3f} | {s.f1:.3f} | {s.seconds:.1f} |"
        )
    ours = next(iter(results.values()))[1]
    errors = [
        (r, p) for r, p in zip(rows, ours, strict=True) if (r.gold == "absent") != (p == "absent")
    ]
    print(f"\nclinsearch negation errors: {len(errors)} (showing {min(args.errors, len(errors))})")
    for row, pred in errors[: args.errors]:
        sentence = squeeze(row.sentence)[:160]
        print(f"- line {row.line}: gold {row.gold}, got {pred}: [{row.condition}] {sentence}")
    precision, recall, historical = historical_scores(rows)
    print(f"\nclinsearch's historical flag against the temporality column ({historical} rows"
          f" historical): P {precision:.3f} R {recall:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
