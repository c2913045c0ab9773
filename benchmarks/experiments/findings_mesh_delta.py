"""Where the IU MeSH finding micro-F1 moved between two versions of the code, by cause.

``dump`` annotates every IU X-ray report with the code on PYTHONPATH and writes, per report, the
gold and predicted concepts of ``bench_findings_mesh``'s primary variant (present,
hierarchical) and each finding's span, polarity and trigger (offsets and rule names, no report
text). ``compare`` reads two dumps and attributes each report-level change (TP lost or gained,
FP removed or added) to a cause: the vocabulary (the span now maps elsewhere or nowhere) or the
assertion reading (the trigger's category and rule), with micro-F1 had that cause's changes
been undone. Only APIs present since ac09ffe are used, so an older checkout can dump too:
  PYTHONPATH=/tmp/ac09/src python benchmarks/experiments/findings_mesh_delta.py dump old.jsonl
  python -m benchmarks.experiments.findings_mesh_delta dump new.jsonl
  python -m benchmarks.experiments.findings_mesh_delta compare old.jsonl new.jsonl
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter, defaultdict
from pathlib import Path

# Hedge rules reported on their own rows (their rule file literals); other hedges share a row.
HEDGE_ROWS = {
    ", mask": "hedge: masked appositive (, XXXX Y)",
    "mask representing": "hedge: XXXX representing / represents",
    "possibly due to": "hedge: possibly / XXXX due to",
    "most likely": "hedge: most likely",
    "may represent": "hedge: may represent / could reflect",
}
VOCABULARY = "vocabulary: the span maps elsewhere or nowhere"
NOW_PRESENT = "assertion: not present before, present now"


def dump(out: Path) -> int:
    """Annotate IU X-ray with the code on PYTHONPATH; one JSON line per report (no text)."""
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.annotate.lexicon import Lexicon
    from clinsearch.corpus.readers import read_reports
    from clinsearch.corpus.readers.records import ReadStats
    from clinsearch.datasets import IU_XRAY, shared_data
    from clinsearch.evaluate.finding_sets import credit_to_gold, lift, present_concepts
    from clinsearch.evaluate.mesh import MeshMap

    path = shared_data(IU_XRAY)
    if path is None:
        print("IU X-ray reports not found (../shared/data/iu_xray); skipping.")
        return 0
    lexicon, mesh = Lexicon.load(), MeshMap.load()
    concepts, targets = lexicon.concepts, mesh.targets
    reports = list(read_reports(path, "iu-xray", skip_bad=True, stats=ReadStats()))
    annotator = Annotator(lexicon)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        for report, found in zip(reports, annotator.annotate_many([r.text for r in reports]),
                                 strict=True):
            gold = set(mesh.gold(report.metadata.get("MeSH", "")).concepts)
            predicted = credit_to_gold(concepts, lift(concepts, present_concepts(found),
                                                      targets), gold)
            findings = []
            for x in found:
                trigger = getattr(x, "trigger", None)  # absent before #26
                findings.append({
                    "concept": x.concept, "start": x.start, "end": x.end,
                    "polarity": x.polarity, "present": bool(present_concepts([x])),
                    "counts_for": sorted(credit_to_gold(concepts, lift(concepts, [x.concept],
                                                                       targets), gold)),
                    "rule": trigger.rule if trigger else None,
                    "category": trigger.category if trigger else None,
                })
            f.write(json.dumps({"id": report.id, "gold": sorted(gold),
                                "predicted": sorted(predicted), "findings": findings}) + "\n")
    print(f"{len(reports)} reports written to {out}")
    return 0


def _cause(finding: dict | None, concept: str) -> str:
    """The cause row of a change whose span reads as ``finding`` in the other version."""
    if finding is None or concept not in finding["counts_for"]:
        return VOCABULARY
    category, rule = finding["category"], finding["rule"]
    if finding["present"]:
        return "other (present at the span)"
    if category == "ALTERNATIVE":
        return "alternative (A or B, versus, and/or)"
    if category == "HEDGING_MODIFIER":
        return "hedging modifier (borderline)"
    if category in ("INDICATION", "SECTION"):
        return "indication / section"
    if category in ("POSSIBLE_EXISTENCE", "PROBABLE_EXISTENCE"):
        return HEDGE_ROWS.get(rule, "hedge: other cues")
    return f"other ({category}, {rule})"


def _same_span(findings: list[dict], span: dict) -> dict | None:
    """The finding of ``findings`` at ``span``'s offsets, else the first one overlapping it."""
    exact = [f for f in findings if (f["start"], f["end"]) == (span["start"], span["end"])]
    overlap = [f for f in findings if f["start"] < span["end"] and span["start"] < f["end"]]
    return (exact or overlap or [None])[0]


def _f1(tp: int, fp: int, fn: int) -> float:
    """Micro-F1 from counts."""
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


def _totals(runs: dict[str, dict]) -> tuple[int, int, int]:
    """Micro TP, FP and FN over every report of a dump."""
    counts: Counter[str] = Counter()
    for r in runs.values():
        gold, predicted = set(r["gold"]), set(r["predicted"])
        counts.update(tp=len(gold & predicted), fp=len(predicted - gold), fn=len(gold - predicted))
    return counts["tp"], counts["fp"], counts["fn"]


def compare(before_path: Path, after_path: Path) -> int:
    """Print the micro-F1 of both dumps and a Markdown table of the changes by cause."""
    before = {r["id"]: r for r in map(json.loads, before_path.open(encoding="utf-8"))}
    after = {r["id"]: r for r in map(json.loads, after_path.open(encoding="utf-8"))}
    if before.keys() != after.keys():
        print(f"{after_path}: the dumps hold different reports", file=sys.stderr)
        return 2
    rows: dict[str, Counter[str]] = defaultdict(Counter)
    by_concept: dict[str, Counter[str]] = defaultdict(Counter)
    for rid, new in after.items():
        old, gold = before[rid], set(after[rid]["gold"])
        was, now = set(old["predicted"]), set(new["predicted"])
        for concept in sorted(was ^ now):
            lost = concept in was
            source = old if lost else new
            seen = next(f for f in source["findings"]
                        if concept in f["counts_for"] and f["present"])
            other = _same_span((new if lost else old)["findings"], seen)
            if lost:
                cause = _cause(other, concept)
            else:
                cause = VOCABULARY if other is None or concept not in other["counts_for"] else (
                    NOW_PRESENT)
            kind = ("TP lost" if concept in gold else "FP removed") if lost else (
                "TP gained" if concept in gold else "FP added")
            rows[cause][kind] += 1
            by_concept[cause][concept] += 1
    tp, fp, fn = _totals(after)
    otp, ofp, ofn = _totals(before)
    drop = _f1(otp, ofp, ofn) - _f1(tp, fp, fn)
    print(f"before: tp {otp} fp {ofp} fn {ofn} micro-F1 {_f1(otp, ofp, ofn):.4f}")
    print(f"after:  tp {tp} fp {fp} fn {fn} micro-F1 {_f1(tp, fp, fn):.4f}\n")
    print("| cause | TP lost | FP removed | TP gained | FP added | F1 with it undone "
          "| share of the change | concepts (most changed) |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for cause, c in sorted(rows.items(), key=lambda kv: -kv[1]["TP lost"]):
        undone = _f1(tp + c["TP lost"] - c["TP gained"], fp + c["FP removed"] - c["FP added"],
                     fn - c["TP lost"] + c["TP gained"])
        share = f"{(undone - _f1(tp, fp, fn)) / drop:.0%}" if drop else ""
        top = ", ".join(f"{k} {n}" for k, n in by_concept[cause].most_common(4))
        print(f"| {cause} | {c['TP lost']} | {c['FP removed']} | {c['TP gained']} "
              f"| {c['FP added']} | {undone:.4f} | {share} | {top} |")
    return 0


def main() -> int:
    """Dump one version's readings, or compare two dumps."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="annotate IU X-ray with the code on PYTHONPATH")
    d.add_argument("out", type=Path, help="new JSONL file (an existing one is not overwritten)")
    c = sub.add_parser("compare", help="attribute the changes between two dumps")
    c.add_argument("before", type=Path)
    c.add_argument("after", type=Path)
    args = ap.parse_args()
    if args.command == "dump":
        if args.out.exists():
            print(f"{args.out}: exists; not overwritten", file=sys.stderr)
            return 2
        return dump(args.out)
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
