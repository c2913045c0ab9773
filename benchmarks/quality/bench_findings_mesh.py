"""Report-level finding extraction on IU X-ray against its manual MeSH labels.

Each report's text (findings + impression, as the iu-xray reader gives it) is annotated with the
shipped lexicon; its present findings (polarity present, not hypothetical) are compared with the
report's MeSH labels mapped by src/clinsearch/evaluate/data/iu_mesh_map.yaml. Predicted concepts
are lifted onto the concepts the map can produce (a concept outside them counts as its nearest
mapped ancestors); in the "hierarchical" rows a predicted concept absent from the gold also counts
for a gold ancestor (a child for its parent, e.g. emphysema for COPD).
Run: python -m benchmarks.quality.bench_findings_mesh [--plain] [--examples N]
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table
from tqdm import tqdm

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.finding import Finding
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.corpus.model import Report
from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.readers.records import ReadStats
from clinsearch.datasets import IU_XRAY, shared_data
from clinsearch.evaluate.finding_sets import SetScores, credit_to_gold, lift, present_concepts
from clinsearch.evaluate.mesh import MeshMap

VARIANTS = (  # (label, count hedged findings as present, credit a child to its gold parent)
    ("present, exact concept", False, False),
    ("present, hierarchical", False, True),
    ("present + uncertain, hierarchical", True, True),
)
PRIMARY = 1
SECTION_LABEL = re.compile(r"(?m)^[A-Z][A-Z ]*:\s*")  # "FINDINGS: ", "IMPRESSION: "


@dataclass
class Run:
    """Scores of one annotation of the reports: every variant, laterality, primary errors."""

    label: str
    seconds: float
    scores: list[SetScores]
    laterality: SetScores
    errors: dict[str, dict[str, list[str]]] = field(default_factory=dict)


def laterality_pairs(findings: list[Finding], lexicon: Lexicon, targets: frozenset[str]) -> set:
    """(concept, laterality) pairs of the present findings, concepts lifted onto the targets."""
    out: set[tuple[str, str]] = set()
    for f in findings:
        if not present_concepts([f]):
            continue
        for c in lift(lexicon.concepts, [f.concept], targets):
            out.update((c, m.value) for m in f.modifiers if m.category == "laterality")
    return out


def score(
    label: str, texts: list[str], reports: list[Report], annotator: Annotator, mesh: MeshMap
) -> Run:
    """Annotate ``texts`` (one per report) and score them against the reports' MeSH gold."""
    lexicon, targets = annotator.lexicon, mesh.targets
    t0 = time.perf_counter()
    findings = list(
        tqdm(annotator.annotate_many(texts), total=len(texts), desc=label, unit="report")
    )
    run = Run(label, time.perf_counter() - t0, [SetScores() for _ in VARIANTS], SetScores())
    errors: dict[str, dict[str, list[str]]] = defaultdict(lambda: {"fp": [], "fn": []})
    for report, found in zip(reports, findings, strict=True):
        gold_labels = mesh.gold(report.metadata.get("MeSH", ""))
        gold = set(gold_labels.concepts)
        for (_, uncertain, hierarchical), scores in zip(VARIANTS, run.scores, strict=True):
            predicted = lift(
                lexicon.concepts, present_concepts(found, uncertain=uncertain), targets
            )
            if hierarchical:
                predicted = credit_to_gold(lexicon.concepts, predicted, gold)
            scores.add(predicted, gold)
            if scores is run.scores[PRIMARY]:
                for c in predicted - gold:
                    errors[c]["fp"].append(report.id)
                for c in gold - predicted:
                    errors[c]["fn"].append(report.id)
                both = predicted & gold
                run.laterality.add(
                    {p for p in laterality_pairs(found, lexicon, targets) if p[0] in both},
                    {
                        (c, v)
                        for c, cat, v in gold_labels.pairs
                        if cat == "laterality" and c in both
                    },
                )
    run.errors = dict(errors)
    return run


def summary_table(runs: list[Run], targets: frozenset[str], title: str) -> Table:
    """Micro P/R/F1 and macro-F1 of every run and variant, plus laterality agreement."""
    table = Table(title=title)
    for col in ("text", "variant", "P", "R", "F1", "macro-F1", "tp", "fp", "fn"):
        table.add_column(col, justify="left" if col in ("text", "variant") else "right")
    for run in runs:
        for (label, _, _), scores in zip(VARIANTS, run.scores, strict=True):
            m = scores.micro
            with_gold = sorted(c for c in targets if scores.concept(c).tp + scores.concept(c).fn)
            table.add_row(
                run.label,
                label,
                f"{m.precision:.3f}",
                f"{m.recall:.3f}",
                f"{m.f1:.3f}",
                f"{scores.macro_f1(with_gold):.3f}",
                str(m.tp),
                str(m.fp),
                str(m.fn),
            )
        lm = run.laterality.micro
        table.add_row(
            run.label,
            "laterality of matched concepts",
            f"{lm.precision:.3f}",
            f"{lm.recall:.3f}",
            f"{lm.f1:.3f}",
            "",
            str(lm.tp),
            str(lm.fp),
            str(lm.fn),
        )
    return table


def concept_table(run: Run) -> Table:
    """Per-concept counts and P/R/F1 of the primary variant."""
    table = Table(title=f"Per concept ({run.label}; {VARIANTS[PRIMARY][0]})")
    for col in ("concept", "gold", "tp", "fp", "fn", "P", "R", "F1"):
        table.add_column(col, justify="left" if col == "concept" else "right")
    scores = run.scores[PRIMARY]
    for c in scores.concepts():
        s = scores.concept(c)
        table.add_row(
            c,
            str(s.tp + s.fn),
            str(s.tp),
            str(s.fp),
            str(s.fn),
            f"{s.precision:.2f}",
            f"{s.recall:.2f}",
            f"{s.f1:.2f}",
        )
    return table


def main() -> int:
    """Annotate every IU X-ray report, score against the mapped MeSH gold, print tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--plain",
        action="store_true",
        help="also annotate the text without the reader's section labels (FINDINGS:)",
    )
    ap.add_argument(
        "--examples",
        type=int,
        default=0,
        help="print up to N false-positive / false-negative report ids per concept",
    )
    ap.add_argument("--limit", type=int, default=0, help="only the first N reports (0: all)")
    args = ap.parse_args()
    path = shared_data(IU_XRAY)
    if path is None:
        print("IU X-ray reports not found (../shared/data/iu_xray); skipping.")
        return 0
    lexicon, mesh = Lexicon.load(), MeshMap.load()
    if problems := mesh.problems(lexicon):
        print("MeSH map does not fit the lexicon:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    stats = ReadStats()
    reports = list(read_reports(path, "iu-xray", skip_bad=True, stats=stats))
    reports = reports[: args.limit] if args.limit else reports
    t0 = time.perf_counter()
    annotator = Annotator(lexicon)
    t_build = time.perf_counter() - t0
    runs = [score("report text", [r.text for r in reports], reports, annotator, mesh)]
    if args.plain:
        plain = [SECTION_LABEL.sub("", r.text) for r in reports]
        runs.append(score("no section labels", plain, reports, annotator, mesh))

    console = Console(width=120)
    title = (
        f"IU X-ray MeSH finding extraction: {len(reports)} reports with text "
        f"({stats.skipped_total} without findings/impression skipped)"
    )
    console.print(summary_table(runs, mesh.targets, title))
    console.print(concept_table(runs[0]))
    timing = "; ".join(
        f"{r.label} {r.seconds:.1f} s ({len(reports) / r.seconds:.0f} reports/s)" for r in runs
    )
    console.print(f"annotator build {t_build:.1f} s; annotation: {timing}")
    if args.examples:
        for c in runs[0].scores[PRIMARY].concepts():
            e = runs[0].errors.get(c, {"fp": [], "fn": []})
            if e["fp"] or e["fn"]:
                print(f"{c}: FP {e['fp'][: args.examples]} FN {e['fn'][: args.examples]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
