"""Lexicon coverage of the finding mentions in the CMC 2007 BioScope dev sentences.

A finding mention is either
- a scope head: the words a BioScope negation or speculation cue governs, from the cue (or the
  scope's start when the cue lies outside it) to the first clause boundary (comma, semicolon,
  coordinator, relative or preposition word: ``BOUNDARY``), when they hold a content word;
  "No [focal pneumonia]", "could [represent atelectasis] or [early infiltrate]"; or
- a title term: a phrase of the ICD-9-CM title of a CMC code (cmc_icd9_titles.yaml), written
  anywhere in a sentence (case-insensitive, whole words, plural "s" allowed).

A mention is covered when the annotator of the lexicon in use finds a concept other than an
anatomy inside it. Prints counts and coverage of both kinds and their union, and the most
frequent uncovered heads. Skips with a message when ../shared/data/cmc2007 is absent.

Run: python -m benchmarks.quality.bench_bioscope_coverage [--lexicon FILE] [--missed N]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.datasets import shared_data

TITLES = Path(__file__).with_name("cmc_icd9_titles.yaml")
BOUNDARY = frozenset({",", ";", ":", ".", "or", "and", "versus", "vs", "but", "which", "that",
                      "with", "without", "to", "for", "because", "given", "as", "since",
                      "although", "nor", "is", "are", "was", "were", "has", "have", "in", "on",
                      "at", "from", "by", "than", "when", "if", "whether"})
FUNCTION_WORDS = frozenset({"no", "not", "any", "the", "a", "an", "of", "evidence", "signs",
                            "sign", "definite", "significant", "acute", "new", "focal", "may",
                            "might", "could", "can", "be", "possible", "possibly", "probable",
                            "probably", "likely", "represent", "represents", "reflect",
                            "consistent", "compatible", "suggest", "suggests", "suggestive",
                            "rule", "out", "r/o", "evaluate", "eval", "question", "questionable",
                            "seen", "identified", "noted", "visualized", "there", "this", "these",
                            "either", "neither", "other", "findings", "finding", "change",
                            "changes", "appearance", "some", "mild", "minimal", "small"})
WORD = re.compile(r"[A-Za-z][A-Za-z'/-]*|[,;:.]")


@dataclass(frozen=True)
class Mention:
    """A finding mention: its sentence, character span and kind (``scope`` or ``title``)."""

    sentence: int
    start: int
    end: int
    kind: str


def scope_heads(text: str, scopes: list[dict], cues: list[dict]) -> list[tuple[int, int]]:
    """The head span of each scope (see the module docstring), when it holds a content word."""
    out = []
    for scope in scopes:
        cue = cues[scope["cue_index"]]
        begin = cue["end"] if scope["start"] <= cue["start"] < scope["end"] else scope["start"]
        words = [m for m in WORD.finditer(text, begin, scope["end"])]
        head = []
        for m in words:
            if m.group().lower() in BOUNDARY:
                if any(w.group().lower() not in FUNCTION_WORDS for w in head):
                    break
                head = []
                continue
            head.append(m)
        content = [m for m in head if m.group().lower() not in FUNCTION_WORDS]
        if content:
            out.append((content[0].start(), content[-1].end()))
    return out


def title_terms(text: str, phrases: list[str]) -> list[tuple[int, int]]:
    """Spans of the title phrases written in ``text``."""
    spans = []
    for phrase in phrases:
        words = r"\s+".join(map(re.escape, phrase.split()))
        spans += [(m.start(), m.end())
                  for m in re.finditer(rf"\b{words}s?\b", text, flags=re.IGNORECASE)]
    return spans


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lexicon", help="lexicon file (default: the shipped one)")
    parser.add_argument("--missed", type=int, default=20, help="uncovered heads to list")
    args = parser.parse_args()
    path = shared_data("cmc2007/bioscope_dev.jsonl")
    if path is None:
        print("skipped: ../shared/data/cmc2007/bioscope_dev.jsonl not found")
        return 0
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    phrases = sorted({p for ps in yaml.safe_load(TITLES.read_text(encoding="utf-8")).values()
                      for p in ps})
    mentions: list[Mention] = []
    for i, row in enumerate(rows):
        mentions += [Mention(i, s, e, "scope")
                     for s, e in scope_heads(row["text"], row["scopes"], row["cues"])]
        mentions += [Mention(i, s, e, "title") for s, e in title_terms(row["text"], phrases)]
    annotator = Annotator(Lexicon.load(args.lexicon))
    found = [[(f.start, f.end) for f in findings if f.type != "anatomy"]
             for findings in annotator.annotate_many(row["text"] for row in rows)]
    covered = {m for m in mentions
               if any(s < m.end and m.start < e for s, e in found[m.sentence])}
    lexicon = annotator.lexicon
    print(f"lexicon: {lexicon.name} ({len(lexicon.concepts)} concepts); "
          f"{len(rows)} sentences")
    print("| mentions | count | covered | coverage |")
    print("| --- | ---: | ---: | ---: |")
    for kind in ("scope", "title", "all"):
        chosen = [m for m in mentions if kind in ("all", m.kind)]
        hits = sum(m in covered for m in chosen)
        print(f"| {kind} | {len(chosen)} | {hits} | {hits / max(len(chosen), 1):.3f} |")
    missed = Counter(rows[m.sentence]["text"][m.start:m.end].lower()
                     for m in mentions if m not in covered)
    print(f"\nmost frequent uncovered mentions ({sum(missed.values())}):")
    for text, n in missed.most_common(args.missed):
        print(f"  {n:3d}  {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
