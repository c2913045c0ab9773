"""Compare sentence splitters and section finders on IU X-ray reports: speed and edge cases.

Methods: clinsearch's rule-based Segmenter, PyRuSH (the RuSH class with its English rules),
medspaCy's pipeline sentencizer (PyRuSH inside spaCy), and PySBD. The libraries are timed on a
subset (they are slow) and projected to the whole corpus. Sections: clinsearch's HeadingFinder
against medspaCy's Sectionizer (default rules), by speed and the section names they give.
Run: ``python -m benchmarks.experiments.bench_segment [--subset N]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from loguru import logger

logger.remove()  # PyRuSH logs every sentence boundary at DEBUG through loguru

from clinsearch.corpus.model import Report  # noqa: E402
from clinsearch.corpus.readers import read_reports  # noqa: E402
from clinsearch.corpus.sections import HeadingFinder  # noqa: E402
from clinsearch.corpus.segment import Segmenter  # noqa: E402
from clinsearch.datasets import IU_XRAY, shared_data  # noqa: E402

Splitter = Callable[[str], list[str]]

# (what it tests, text, expected sentences): sentence-level cases, no section headings
EDGE_CASES: list[tuple[str, str, list[str]]] = [
    (
        "numbered items",
        "1. No acute disease. 2. Stable cardiomegaly. 3. Small left effusion.",
        ["1. No acute disease.", "2. Stable cardiomegaly.", "3. Small left effusion."],
    ),
    (
        "unpunctuated items",
        "1. No pneumothorax 2. ETT tip 4 cm above the carina 3. Stable",
        ["1. No pneumothorax", "2. ETT tip 4 cm above the carina", "3. Stable"],
    ),
    (
        "numbers, decimals",
        "Fractures of ribs 5 and 6. Nodule of 2.5 cm in the left lobe. No change.",
        ["Fractures of ribs 5 and 6.", "Nodule of 2.5 cm in the left lobe.", "No change."],
    ),
    (
        "XXXX tokens",
        "XXXX deformity of the spine. XXXX XXXX are intact. Normal on XXXX, XXXX.",
        ["XXXX deformity of the spine.", "XXXX XXXX are intact.", "Normal on XXXX, XXXX."],
    ),
    (
        "Dr., a.m.",
        "Discussed with Dr. Smith at 9:30 a.m. on the ward. Mr. Jones agreed.",
        ["Discussed with Dr. Smith at 9:30 a.m. on the ward.", "Mr. Jones agreed."],
    ),
    (
        "vs., approx., e.g.",
        "Atelectasis vs. Pneumonia, approx. 3 cm, e.g. Lingula. Clear.",
        ["Atelectasis vs. Pneumonia, approx. 3 cm, e.g. Lingula.", "Clear."],
    ),
    (
        "dashed list",
        "Tubes:\n- ETT 5 cm above carina\n- NG tube in stomach\n- Right PICC",
        ["Tubes:", "- ETT 5 cm above carina", "- NG tube in stomach", "- Right PICC"],
    ),
    (
        "newline, no punctuation",
        "Heart size normal\nNo pleural effusion\nNo pneumothorax",
        ["Heart size normal", "No pleural effusion", "No pneumothorax"],
    ),
    (
        "hard-wrapped line",
        "Small left effusion with adjacent\nbasilar atelectasis. No pneumothorax.",
        ["Small left effusion with adjacent\nbasilar atelectasis.", "No pneumothorax."],
    ),
    (
        "stray punctuation",
        "Contours normal..  Minimal atelectasis .  \n . \n  Otherwise clear!",
        ["Contours normal..", "Minimal atelectasis .", "Otherwise clear!"],
    ),
]


def clean(pieces: list[str]) -> list[str]:
    """Sentences trimmed, keeping only those with a letter or digit (as clinsearch does)."""
    return [p.strip() for p in pieces if any(c.isalnum() for c in p)]


def clinsearch_splitter() -> Splitter:
    """clinsearch's Segmenter (sections, then rule-based sentences)."""
    segmenter = Segmenter()
    return lambda text: [s.text for s in segmenter.segment(Report("r", text)).sentences]


def pyrush_splitter() -> Splitter:
    """PyRuSH's RuSH class with the English rules shipped with it (no spaCy)."""
    from PyRuSH import RuSH

    rules = Path(sys.prefix) / "lib" / "python3.11" / "site-packages" / "resources" / "en"
    rush = RuSH(str(rules / "rush_rules.tsv"))
    return lambda text: clean([text[s.begin : s.end] for s in rush.segToSentenceSpans(text)])


def medspacy_splitter() -> Splitter:
    """medspaCy's default pipeline sentencizer (PyRuSH as a spaCy component)."""
    import medspacy

    nlp = medspacy.load(enable=["medspacy_pyrush"])
    return lambda text: clean([s.text for s in nlp(text).sents])


def pysbd_splitter() -> Splitter:
    """PySBD, English, without cleaning so that spans stay exact."""
    import pysbd

    seg = pysbd.Segmenter(language="en", clean=False, char_span=True)
    return lambda text: clean([s.sent for s in seg.segment(text)])


METHODS: dict[str, Callable[[], Splitter]] = {
    "clinsearch rule-based": clinsearch_splitter,
    "PyRuSH (RuSH)": pyrush_splitter,
    "medspaCy pipeline": medspacy_splitter,
    "PySBD": pysbd_splitter,
}


def main() -> None:
    """Time each method and score it on the edge cases; print one table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--subset", type=int, default=300, help="reports timed for the libraries")
    args = parser.parse_args()
    path = shared_data(IU_XRAY)
    if path is None:
        print("IU X-ray reports not found (../shared/data/iu_xray); skipping")
        return
    texts = [r.text for r in read_reports(path, "iu-xray", skip_bad=True)]
    print(f"IU X-ray: {len(texts)} reports; libraries timed on the first {args.subset}")
    print(
        f"| method | reports timed | sentences | seconds | sentences/s | projected s, all "
        f"{len(texts)} | edge cases passed |"
    )
    print("|---|---:|---:|---:|---:|---:|---|")
    failures: dict[str, list[str]] = {}
    for name, make in METHODS.items():
        split = make()
        sample = texts if name.startswith("clinsearch") else texts[: args.subset]
        start = time.perf_counter()
        sentences = sum(len(split(t)) for t in sample)
        seconds = time.perf_counter() - start
        projected = seconds * len(texts) / len(sample)
        failed = [what for what, text, expected in EDGE_CASES if split(text) != expected]
        failures[name] = failed
        print(
            f"| {name} | {len(sample)} | {sentences} | {seconds:.2f} | {sentences / seconds:,.0f} "
            f"| {projected:.1f} | {len(EDGE_CASES) - len(failed)}/{len(EDGE_CASES)} |"
        )
    print()
    for name, failed in failures.items():
        print(f"{name} fails: {', '.join(failed) or 'none'}")
    print()
    compare_sections(texts, args.subset)


def section_names(texts: list[str], method: str) -> Counter[str]:
    """Section names found in ``texts`` by ``method`` (``clinsearch`` or ``medspaCy``)."""
    if method == "clinsearch":
        finder = HeadingFinder()
        return Counter(h.name for t in texts for h in finder.find(t))
    import medspacy  # noqa: F401  (registers the medspacy_sectionizer factory)
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("medspacy_sectionizer")
    return Counter(s.category for doc in nlp.pipe(texts) for s in doc._.sections)


def compare_sections(texts: list[str], subset: int) -> None:
    """Time both section finders and show the names they give to IU headings."""
    print("| section finder | reports timed | seconds | projected s, all | top section names |")
    print("|---|---:|---:|---:|---|")
    for method in ("clinsearch", "medspaCy"):
        sample = texts if method == "clinsearch" else texts[:subset]
        start = time.perf_counter()
        names = section_names(sample, method)
        seconds = time.perf_counter() - start
        top = ", ".join(f"{name} {n}" for name, n in names.most_common(3))
        projected = seconds * len(texts) / len(sample)
        print(f"| {method} | {len(sample)} | {seconds:.2f} | {projected:.2f} | {top} |")


if __name__ == "__main__":
    main()
