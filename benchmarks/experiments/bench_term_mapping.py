"""How unknown query words are mapped to lexicon terms: default MiniLM vs a trained term model.

For each query, the explain-query path (``concept_tools`` + ``explain_query``) reports the
unknown phrase, its nearest lexicon term with cosine, whether it replaced the phrase, and the
finding patterns the query ends up with, once per term model. Needs no shared data.

Run: ``python -m benchmarks.experiments.bench_term_mapping --term-model DIR [QUERY ...]``
where DIR comes from ``clinsearch train terms --out DIR``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

QUERIES = ("cardiomegally", "collapsed lung", "fluid in the pleural space", "heart is big")


def _cell(explained: dict[str, Any]) -> str:
    """Unknown phrases -> nearest term (cosine, used or not), then the resulting patterns."""
    maps = [
        f"{u['phrase']} -> {u['nearest'][0]['term']} ({u['nearest'][0]['similarity']:.2f}"
        f"{', used' if u['used'] else ', not used'})"
        for u in explained["unknown_words"]
    ]
    patterns = [p["pattern"] for group in explained["groups"] for p in group]
    return "; ".join(maps or ["(no unknown words)"]) + " => " + (" / ".join(patterns) or "nothing")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--term-model", type=Path, required=True, help="trained term model folder")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("queries", nargs="*", default=list(QUERIES))
    args = parser.parse_args()
    import torch

    from clinsearch.search.concept.tools import checked_term_model, concept_tools
    from clinsearch.search.explain_query import explain_query

    torch.set_num_threads(args.threads)
    models = {"all-MiniLM-L6-v2 (default)": None,
              f"trained ({args.term_model.name})": checked_term_model(args.term_model)}
    print("| query | " + " | ".join(models) + " |")
    print("|---|" + "---|" * len(models))
    for query in args.queries:
        cells = []
        for path in models.values():
            tools = concept_tools(None, path)
            explained = explain_query(tools.parser.parse(query), tools.hierarchy, tools.lexicon)
            cells.append(_cell(explained))
        print(f"| {query} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
