"""Report-level finding extraction on IU X-ray against its manual MeSH labels.

Each report's text (findings + impression) is annotated with the shipped lexicon; its present
findings (polarity present, not hypothetical) are compared with the report's MeSH labels mapped by
src/clinsearch/evaluate/data/iu_mesh_map.yaml. Predicted concepts are lifted onto the concepts the
map can produce (a concept outside them counts as its nearest mapped ancestors); in the
"hierarchical" rows a predicted concept absent from the gold also counts for a gold ancestor (a
child for its parent, e.g. emphysema for COPD). Run: python benchmarks/bench_findings_mesh.py
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict

from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.finding import Finding
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.readers.records import ReadStats
from clinsearch.datasets import IU_XRAY, shared_data
from clinsearch.evaluate.finding_sets import (
    SetScores,
    credit_to_gold,
    lift,
    present_concepts,
)
from clinsearch.evaluate.mesh import MeshMap

VARIANTS = (  # (label, count hedged findings as present, credit a child to its gold parent)
    ("present, exact concept", False, False),
    ("present, hierarchical", False, True),
    ("present + uncertain, hierarchical", True, True),
)
PRIMARY = 1


def laterality_pairs(findings: list[Finding], lexicon: Lexicon, targets: frozenset[str]) -> set:
    """(concept, laterality) pairs of the present findings, concepts lifted onto the targets."""
    out: set[tuple[str, str]] = set()
    for f in findings:
        if not present_concepts([f]):
            continue
        for c in lift(lexicon.concepts, [f.concept], targets):
            out.update((c, m.value) for m in f.modifiers if m.category == "laterality")
    return out


def main() -> int:
    """Annotate every IU X-ray report, score against the mapped MeSH gold, print tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--examples", type=int, default=0,
                    help="print up to N false-positive / false-negative report ids per concept")
    ap.add_argument("--limit", type=int, default=0, help="only the first N reports (0: all)")
    args = ap.parse_args()
    path = shared_data(IU_XRAY)
    if path is None:
        print("IU X-ray reports not found (../shared/data/iu_xray); skipping.")
        return 0
    console = Console()
    lexicon = Lexicon.load()
    mesh = MeshMap.load()
    if problems := mesh.problems(lexicon):
        print("MeSH map does not fit the lexicon:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    stats = ReadStats()
    reports = list(read_reports(path, "iu-xray", skip_bad=True, stats=stats))
    if args.limit:
        reports = reports[: args.limit]
    targets = mesh.targets
    t0 = time.perf_counter()
    annotator = Annotator(lexicon)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    findings = list(tqdm(annotator.annotate_many(r.text for r in reports), total=len(reports),
                         desc="annotating", unit="report"))
    t_annotate = time.perf_counter() - t0

    scores = [SetScores() for _ in VARIANTS]
    lat = SetScores()
    errors: dict[str, dict[str, list[str]]] = defaultdict(lambda: {"fp": [], "fn": []})
    for report, found in zip(reports, findings, strict=True):
        gold_labels = mesh.gold(report.metadata.get("MeSH", ""))
        gold = set(gold_labels.concepts)
        for (_, uncertain, hierarchical), score in zip(VARIANTS, scores, strict=True):
            predicted = lift(lexicon.concepts, present_concepts(found, uncertain=uncertain), targets)
            if hierarchical:
                predicted = credit_to_gold(lexicon.concepts, predicted, gold)
            score.add(predicted, gold)
            if score is scores[PRIMARY]:
                for c in predicted - gold:
                    errors[c]["fp"].append(report.id)
                for c in gold - predicted:
                    errors[c]["fn"].append(report.id)
                both = predicted & gold
                lat.add(
                    {p for p in laterality_pairs(found, lexicon, targets) if p[0] in both},
                    {(c, v) for c, cat, v in gold_labels.pairs if cat == "laterality" and c in both},
                )

    title = f"IU X-ray MeSH finding extraction ({len(reports)} reports with text"
    table = Table(title=f"{title}; {stats.skipped_total} without findings/impression skipped)")
    for col in ("variant", "P", "R", "F1", "macro-F1", "tp", "fp", "fn"):
        table.add_column(col, justify="left" if col == "variant" else "right")
    for (label, _, _), score in zip(VARIANTS, scores, strict=True):
        m = score.micro
        macro = score.macro_f1(sorted({c for c in targets if score.concept(c).tp + score.concept(c).fn}))
        table.add_row(label, f"{m.precision:.3f}", f"{m.recall:.3f}", f"{m.f1:.3f}", f"{macro:.3f}",
                      str(m.tp), str(m.fp), str(m.fn))
    lm = lat.micro
    table.add_row("laterality of matched concepts", f"{lm.precision:.3f}", f"{lm.recall:.3f}",
                  f"{lm.f1:.3f}", "", str(lm.tp), str(lm.fp), str(lm.fn))
    console.print(table)

    per = Table(title=f"Per concept ({VARIANTS[PRIMARY][0]})")
    for col in ("concept", "gold", "tp", "fp", "fn", "P", "R", "F1"):
        per.add_column(col, justify="left" if col == "concept" else "right")
    primary = scores[PRIMARY]
    for c in primary.concepts():
        s = primary.concept(c)
        per.add_row(c, str(s.tp + s.fn), str(s.tp), str(s.fp), str(s.fn),
                    f"{s.precision:.2f}", f"{s.recall:.2f}", f"{s.f1:.2f}")
    console.print(per)
    n_sent = sum(r.text.count(". ") + 1 for r in reports)
    console.print(f"annotator build {t_build:.1f} s; annotation {t_annotate:.1f} s "
                  f"({len(reports) / t_annotate:.0f} reports/s, ~{n_sent / t_annotate:.0f} sentences/s)")
    if args.examples:
        for c in primary.concepts():
            e = errors[c]
            if e["fp"] or e["fn"]:
                print(f"{c}: FP {e['fp'][: args.examples]} FN {e['fn'][: args.examples]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
