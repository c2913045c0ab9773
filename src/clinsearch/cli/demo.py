"""The ``demo`` command: index the bundled sample and show what negation-aware search adds."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from clinsearch.cli import app, console
from clinsearch.cli.cohort import print_counts, print_members

# (query, level, method, what it shows); dense search is left out: its model loads slowly.
_DEMO_SEARCHES: tuple[tuple[str, str, str, str], ...] = (
    ("pneumothorax", "report", "bm25",
     "BM25 matches words: 'No pneumothorax.' ranks first, though it says the opposite"),
    ("pneumothorax", "report", "concept",
     "concept search keeps the query's polarity: only reports where pneumothorax is present"),
    ("enlarged heart", "report", "concept",
     "the lexicon maps synonyms to concepts: 'enlarged heart' finds cardiomegaly"),
    ("right lower lobe pneumonia", "patient", "concept",
     "patients, each by their best report; modifiers (right, lower lobe) rank exact matches first"),
)
_DEMO_COHORT = ('pneumonia AND NOT "pleural effusion"', "patient",
                "a Boolean cohort query, counted at every level, with evidence sentences")


def _command(*words: str) -> str:
    """A copy-pasteable shell command line, bold, as the demo prints it before each result."""
    return f"[bold]$ {escape(shlex.join(['clinsearch', *words]))}[/]"


@app.command("demo")
def demo_command(
    out: Annotated[Path, typer.Option(help="Where to write the demo index.")] = Path("demo-index"),
) -> None:
    """Index the bundled synthetic sample corpus, then compare BM25 with negation-aware concept
    search and run a cohort query (each step prints its equivalent command)."""
    from clinsearch import Index
    from clinsearch.corpus.readers import read_reports
    from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path
    from clinsearch.search.cohort import Cohort
    from clinsearch.search.output import hits_table

    index = Index.build(read_reports(sample_reports_path(), SAMPLE_FORMAT), out)
    counts = index.manifest.counts
    console.print(
        f"indexed the bundled sample: {counts.reports} synthetic reports, {counts.sentences}"
        f" sentences, {counts.visits} visits, {counts.patients} patients -> {escape(str(out))}\n"
    )
    for query, level, method, note in _DEMO_SEARCHES:
        console.print(_command("search", str(out), query, "--level", level, "--top", "5",
                               "--method", method))
        console.print(f"[dim]{note}[/]")
        hits = index.search(query, level=level, top=5, method=method)  # type: ignore[arg-type]
        console.print(hits_table(hits, level))  # type: ignore[arg-type]
    query, level, note = _DEMO_COHORT
    console.print(_command("cohort", str(out), query, "--level", level, "--show", "3"))
    console.print(f"[dim]{note}[/]")
    cohort = Cohort(out)
    print_counts(query, cohort.counts(query))
    print_members(cohort.members(query, level)[:3], level)  # type: ignore[arg-type]
    console.print(
        f"\nTry your own: clinsearch search {escape(str(out))} 'QUERY' --method concept"
        " --level patient"
    )
