"""The ``cohort`` command: counts and members of a Boolean cohort query, locally or on Spark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from clinsearch.cli import app, console
from clinsearch.cli.options import (
    ContextOpt,
    Engine,
    IncludeUncertain,
    IndexDir,
    SparkMaster,
    TermModel,
    check_engine,
)
from clinsearch.errors import ClinsearchError
from clinsearch.terminal import printable

PolarityMode = Annotated[
    str,
    typer.Option(help="concept/cohort: 'query' keeps the polarity the query states "
                 "('pneumonia' never matches 'no pneumonia'); 'any' ignores polarity."),
]

COHORT_HELP = """Count (and export) the patients, visits and reports a Boolean cohort query matches.

\b
Syntax (keywords in any case):
  pneumonia                      a finding, present (as the lexicon knows it, synonyms included)
  "no pleural effusion"          a negated finding; 'possible X' is an uncertain one
  right lower lobe pneumonia     words in a row form one finding with its modifiers
  A AND B, A OR B, NOT A, ( )    NOT binds tightest, then AND, then OR; 'A B' means A AND B
  (A AND B) same sentence        scope: sentence, report, visit or patient (default: --level)
  type:"CHEST XRAY"              report type          date:2020-01-01..2020-12-31  report date
  section:impression             sentence section     text:"port"  sentences containing text
  context:historical             only findings in that context (family, historical,
                                 hypothetical, indication; any: in any context or none)
Filters restrict every finding of the AND group they stand in; type and section compare
without case, spaces or punctuation, and a filter that matches nothing is warned about.
A finding counts when asserted for this patient, now: not 'mother had lung cancer', 'history
of pneumonia', 'evaluate for pneumonia' or the clinical history's reason for the exam
(indication). --context historical widens that (asserted OR
historical, as in search); the filter context:historical narrows a group to historical ones.
Beside the counts: the search tiers counted, and how many more units each other tier would
add ("+4 reports if stated only as the reason for the exam counts (--context indication)").
\b
Example:
  clinsearch cohort IDX 'pneumonia AND NOT "pleural effusion"' --level patient --export ids.csv
"""


SPARK_NO_WIDER = ("not computed with --engine spark (run the cohort without it to see what"
                  " each wider tier would add)")


@app.command("cohort", help=COHORT_HELP)
def cohort_command(
    index_dir: IndexDir,
    query: Annotated[str, typer.Argument(help="The cohort query (see above).", show_default=False)],
    level: Annotated[
        str, typer.Option(help="Level the query is about and --export lists: patient, visit, "
                          "report or sentence.")
    ] = "patient",
    export: Annotated[
        Path | None,
        typer.Option(help="Write the matching units, each with an evidence sentence (local"
                     " engine; ids only with --engine spark), to this CSV, after '#' lines"
                     " giving the query and the tiers counted."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the --export file if it exists.")
    ] = False,
    show: Annotated[int, typer.Option(help="Print the first N matching units.", min=0)] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
    include_uncertain: IncludeUncertain = False,
    polarity: PolarityMode = "query",
    context: ContextOpt = None,
    term_model: TermModel = None,
    engine: Engine = "local",
    spark_master: SparkMaster = None,
) -> None:
    from clinsearch.exports import check_export_path
    from clinsearch.index import IndexStore
    from clinsearch.search.cohort import Cohort, export_header, write_members_csv
    from clinsearch.search.concept.ranking import PolarityOptions, parse_context
    from clinsearch.search.method_params import POLARITY_MODES
    from clinsearch.search.tiers import counted_tiers, wider_tiers
    from clinsearch.units import check_level

    check_level(level)
    if polarity not in POLARITY_MODES:
        raise ClinsearchError(f"unknown polarity {polarity!r}; choose {', '.join(POLARITY_MODES)}")
    check_engine(engine)
    if export:
        check_export_path(export, force)  # before the work, so a bad path fails at once
    options = PolarityOptions(include_uncertain, polarity, parse_context(context))
    want_members = bool(export or show)
    if engine == "spark":
        counts, members = _spark_cohort(index_dir, query, level, want_members, options,
                                        term_model, spark_master)
        wider: list[Any] | None = None  # not computed on Spark: said so, never "none"
    else:
        store = IndexStore.open(index_dir)
        cohort = Cohort(store, options, term_model)
        sets = cohort.sets(query)
        counts = {unit: int(mask.sum()) for unit, mask in sets.items()}
        for warning in cohort.warnings(query):
            typer.echo(f"warning: {warning}", err=True)
        members = cohort.members(query, level) if want_members else []  # type: ignore[arg-type]
        wider = wider_tiers(cohort, query, sets=sets)
    counted = counted_tiers(options)
    if export:
        write_members_csv(members, level, export, force,  # type: ignore[arg-type]
                          export_header(query, level, counted))  # type: ignore[arg-type]
    if as_json:
        typer.echo(json.dumps({"query": query, "level": level, "counts": counts,
                               "counted_tiers": counted,
                               "wider_tiers": None if wider is None else [
                                   w.to_dict() for w in wider],
                               "exported": str(export) if export else None}))
        return
    print_counts(query, counts)
    console.print("tiers counted: " + ", ".join(counted), highlight=False)
    count_level = level if level in counts else "report"
    if wider is None:
        console.print(f"wider tiers: {SPARK_NO_WIDER}", highlight=False)
    for more in wider or ():  # what each wider tier would add, and the option that counts it
        console.print(escape(more.line(count_level)), highlight=False)
    if show:
        print_members(members[:show], level)
    if export:
        console.print(f"wrote {len(members):,} {level}s to {escape(str(export))}")


def _spark_cohort(index_dir: Path, query: str, level: Any, want_members: bool, options: Any,
                  term_model: Path | None, master: str | None) -> tuple[dict[Any, int], list[Any]]:
    """``cohort --engine spark``: counts and member ids from Spark SQL (no evidence sentences:
    those columns of --export stay empty)."""
    from clinsearch.search.cohort import Member
    from clinsearch.spark import spark_session
    from clinsearch.spark.cohort import index_cohort

    with index_cohort(spark_session(master), index_dir, term_model=term_model,
                      options=options) as engine:
        answer = engine.answer(query, level, members=want_members)
    return answer.counts, [Member(ids, "", "", "", "", "") for ids in answer.members]


def print_counts(query: str, counts: dict[Any, int]) -> None:
    """The patients, visits and reports a cohort query matches, as a small table."""
    from clinsearch.search.cohort import COUNT_LEVELS

    table = Table(title=escape(printable(query)), title_justify="left", show_header=False, box=None)
    for unit in COUNT_LEVELS:
        table.add_row(f"{unit}s", f"{counts[unit]:,}")
    console.print(table)


def print_members(members: list[Any], level: str) -> None:
    """A table of cohort members with their evidence sentences and the triggers of their
    findings."""
    from clinsearch.search.cohort import ID_COLUMNS

    table = Table(show_lines=False)
    for name in ID_COLUMNS[level]:  # type: ignore[index]
        table.add_column(name.removesuffix("_id"))
    table.add_column("matched")
    table.add_column("trigger")
    table.add_column("evidence sentence", ratio=1)
    for m in members:
        ids = [escape(printable(i, one_line=True)) for i in m.ids]
        table.add_row(*ids, escape(printable(m.term)), escape(printable(m.trigger)),
                      escape(printable(m.sentence)))
    console.print(table)
