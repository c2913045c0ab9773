"""Calibrate the similarity threshold above which an unknown query word is mapped to a lexicon term.

Cases come from the shipped lexicon itself, with no labels: for each concept (in a seeded
sample), one of its terms is held out as if a user had typed it, together with every term
that shares a word with it (so "pleural effusions" cannot simply find "pleural effusion"):

- *should map* (synonym held out): the concept keeps its other terms; the mapping is right when
  the nearest remaining term stands for the same concept;
- *should map* (misspelt): a term with one seeded character edit, the concept's other terms
  kept; right when the nearest term stands for the concept;
- *should not map* (concept held out): every term of the concept removed, as for a word the
  lexicon does not know ("dextrocardia"); any mapping is wrong.

Precision = right mappings / mappings made at the threshold; recall = right mappings / should-map
cases; false-map rate = share of should-not-map cases mapped anyway. The threshold in
``search/query.py`` is the lowest one whose false-map rate is at most 10%: a word the lexicon
does not know is then left to text search (BM25 / dense) nine times in ten.

Run: ``python -m benchmarks.experiments.bench_map_threshold [--sample 300] [--seed 0]``
"""

from __future__ import annotations

import argparse
import random
import sys

import numpy as np

THRESHOLDS = (0.55, 0.6, 0.62, 0.65, 0.7, 0.72, 0.75, 0.78, 0.8, 0.85, 0.9)
MAX_FALSE_MAP_RATE = 0.10


def misspelt(word: str, rng: random.Random) -> str:
    """``word`` with one character deleted, doubled or swapped with its neighbour."""
    letters = [i for i, c in enumerate(word) if c.isalpha()]
    if len(letters) < 4:
        return word + word[-1]
    i = rng.choice(letters[1:-1])
    kind = rng.choice(("delete", "double", "swap"))
    if kind == "delete":
        return word[:i] + word[i + 1 :]
    if kind == "double":
        return word[:i] + word[i] + word[i:]
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sample", type=int, default=300, help="concepts sampled (seeded)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    import torch

    from clinsearch.search.concept.tools import concept_tools
    from clinsearch.search.query_parser import MAP_THRESHOLD

    torch.set_num_threads(args.threads)
    parser = concept_tools().parser
    vectors = parser.vectors
    rng = random.Random(args.seed)
    concept_rows: dict[str, list[int]] = {}
    for row, term in enumerate(vectors.terms):
        if term.kind == "concept":
            concept_rows.setdefault(term.ref, []).append(row)
    concepts = sorted(c for c, rows in concept_rows.items() if len(rows) >= 2)
    chosen = rng.sample(concepts, min(args.sample, len(concepts)))
    cases: list[tuple[str, str, set[int], bool, str]] = []  # text, concept, hidden, map?, kind
    for cid in chosen:
        rows = concept_rows[cid]
        held = rng.choice(rows)
        text = vectors.terms[held].text
        words = set(text.lower().split())
        hidden = {r for r, t in enumerate(vectors.terms) if words & set(t.text.lower().split())}
        if set(rows) - hidden:
            cases.append((text, cid, hidden, True, "synonym"))
            cases.append((misspelt(text, rng), cid, hidden, True, "misspelt"))
        cases.append((text, cid, hidden | set(rows), False, "unknown"))
    embedded = parser.encoder.encode_queries([c[0] for c in cases])
    searchable = np.array([t.kind != "part" for t in vectors.terms])
    best_sim, right = [], []
    for (_, cid, hidden, _, _), vec in zip(cases, embedded, strict=True):
        sims = np.where(searchable, vectors.vectors @ vec, -np.inf)
        sims[list(hidden)] = -np.inf
        top = int(np.argmax(sims))
        best_sim.append(float(sims[top]))
        right.append(vectors.terms[top].ref == cid)
    sim, ok = np.array(best_sim), np.array(right)
    should = np.array([c[3] for c in cases])
    print(f"{len(cases)} cases from {len(chosen)} concepts: {int(should.sum())} should map,"
          f" {int((~should).sum())} should not (seed {args.seed})")
    print("| threshold | mappings | precision | recall | false-map rate | misspelt right |")
    print("|---:|---:|---:|---:|---:|---:|")
    typo = np.array([c[4] == "misspelt" for c in cases])
    for t in THRESHOLDS:
        made = sim >= t
        good = made & ok & should
        precision = good.sum() / max(made.sum(), 1)
        recall = good.sum() / max(should.sum(), 1)
        false_rate = (made & ~should).sum() / max((~should).sum(), 1)
        typo_right = (made & ok & typo).sum() / max(typo.sum(), 1)
        mark = " (current)" if abs(t - MAP_THRESHOLD) < 1e-9 else ""
        chosen_mark = " <=" if false_rate <= MAX_FALSE_MAP_RATE else ""
        print(f"| {t:.2f}{mark} | {int(made.sum())} | {precision:.3f} | {recall:.3f} |"
              f" {false_rate:.3f}{chosen_mark} | {typo_right:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
