"""Peak memory and time of costly cohort queries: a phrase of N random words (whose matching
grew as N cubed before the phrase budget), and the costliest query within the bounds of
``clinsearch.limits`` (as many phrases of the most words as fit the query's length).

Each query runs in its own process after a warm-up (the cohort engine open and the ConText
pipeline loaded), so the peak resident memory it adds is its own. A query refused by a bound
shows its error. Run: python -m benchmarks.performance.bench_query_cost INDEX [--words 150,300]
(INDEX: an index folder; the synthetic sample corpus indexed by ``clinsearch demo`` will do).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import string
import subprocess
import sys
import time


def random_words(n: int, seed: int, letters: int = 7) -> str:
    """``n`` random lower-case words of ``letters`` letters."""
    rng = random.Random(seed)
    return " ".join("".join(rng.choice(string.ascii_lowercase) for _ in range(letters))
                    for _ in range(n))


def costliest_query() -> str:
    """Quoted phrases of MAX_PHRASE_WORDS random words, OR-ed up to MAX_QUERY_CHARS."""
    from clinsearch.limits import MAX_PHRASE_WORDS, MAX_QUERY_CHARS

    phrases: list[str] = []
    for seed in range(10_000):
        phrase = f'"{random_words(MAX_PHRASE_WORDS, seed, letters=3)}"'
        if len(" OR ".join([*phrases, phrase])) > MAX_QUERY_CHARS:
            break
        phrases.append(phrase)
    return " OR ".join(phrases)


def measure(index: str, query: str) -> dict[str, object]:
    """In this process: warm up, run ``query``, report its time and added peak memory."""
    from clinsearch.search.cohort import Cohort

    cohort = Cohort(index)
    cohort.counts("pneumonia")
    cohort.counts('"abcdefg hijklmn"')  # loads the ConText pipeline phrases are read with
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    try:
        outcome = f"counted: {cohort.counts(query)['report']} reports"
    except Exception as exc:  # a bound refused it: say which
        outcome = f"{type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"seconds": seconds, "base_mb": before / 1024, "added_mb": (after - before) / 1024,
            "outcome": outcome}


def main() -> int:
    """Each case in a child process; a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("index")
    parser.add_argument("--words", default="150,300,1240")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(args.index, args.child)))
        return 0
    cases = [(f"one phrase of {n} random words", random_words(int(n), 1))
             for n in args.words.split(",")]
    cases.append(("costliest within the bounds", costliest_query()))
    print("| query | characters | seconds | peak memory added (MB) | outcome |")
    print("| --- | ---: | ---: | ---: | --- |")
    for name, query in cases:
        run = subprocess.run([sys.executable, "-m", "benchmarks.performance.bench_query_cost",
                              args.index, "--child", query], capture_output=True, text=True)
        if run.returncode:
            print(f"| {name} | {len(query):,} | - | - | process died ({run.returncode}) |")
            continue
        got = json.loads(run.stdout.strip().splitlines()[-1])
        print(f"| {name} | {len(query):,} | {got['seconds']:.2f} | {got['added_mb']:.0f} |"
              f" {got['outcome']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
