"""The ``review`` commands: chart review of a cohort in the workbench's store (the same reviews
the server's workbench shows), from the terminal."""

from __future__ import annotations

import csv
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from clinsearch.cli import app, console
from clinsearch.cli.options import IndexDir
from clinsearch.errors import ClinsearchError
from clinsearch.terminal import printable

if TYPE_CHECKING:
    from clinsearch.search.cohort import Cohort, Scope
    from clinsearch.server.review_store import ReviewState, ReviewStore

review_app = typer.Typer(
    help="Chart review of a cohort: draw a fixed, seeded sample of its members, record each"
    " reviewer's verdict (meets / does not meet / cannot tell) by report id, and report precision"
    " with its Wilson 95% interval, Cohen's kappa and a recall estimate. Reviews live in the"
    " workbench's store (the file `clinsearch serve --workbench` uses), so the page and the CLI"
    " show the same figures.",
    no_args_is_help=True)
app.add_typer(review_app, name="review")

Store = Annotated[Path, typer.Option(
    "--workbench", help="The workbench store (SQLite) holding the reviews (default: as serve's,"
    " clinsearch-workbench.sqlite in this folder).")]
ReviewId = Annotated[int, typer.Argument(help="The review's number (review list).",
                                         show_default=False)]
DEFAULT_STORE = Path("clinsearch-workbench.sqlite")
SampledReport = Annotated[str, typer.Argument(help="A sampled report's id.", show_default=False)]
Verdict = Annotated[str, typer.Argument(help="meets, does_not_meet or cannot_tell.",
                                        show_default=False)]


def _store(path: Path) -> ReviewStore:
    from clinsearch.server.review_store import ReviewStore

    return ReviewStore(path)


def _state(path: Path, review_id: int) -> tuple[ReviewStore, ReviewState]:
    store = _store(path)
    found = store.review(review_id)
    if found is None:
        store.close()
        raise ClinsearchError(f"{path}: there is no review {review_id}")
    return store, store.state(found)


def _read(path: Path, review_id: int) -> ReviewState:
    """A review as stored, the store closed again."""
    store, state = _state(path, review_id)
    store.close()
    return state


def _scope(cohort: Cohort, path: Path, owner: str, page: dict[str, str]) -> Scope:
    """Where a saved cohort's query looks, as the server reads it: the owner's term bundles it
    names and the id list it is restricted to. Opened while no other connection to the store
    is open in this process (opening the file would drop that connection's locks)."""
    from clinsearch.search.cohort.syntax import fold
    from clinsearch.server.workbench_store import WorkbenchStore

    bench = WorkbenchStore(path)
    try:
        folded = fold(page.get("query", ""))
        bundles = {name: terms for name, terms in bench.bundle_terms_for(owner).items()
                   if name in folded}
        within = None
        if page.get("list", "").isdigit():
            listed = bench.id_list(int(page["list"]))
            if listed is None:
                raise ClinsearchError(f"{path}: the saved cohort's id list {page['list']} is gone")
            within = cohort.id_mask(listed.kind, listed.ids)[0]
    finally:
        bench.close()
    return cohort.scope(bundles, within)


@review_app.command("start", help="Draw a review's sample from a cohort query (at report level)"
                    " and keep it fixed. Prints the review's number and the sampled report ids.")
def start_command(
    index_dir: IndexDir,
    query: Annotated[str, typer.Argument(help="The cohort query (see `clinsearch cohort"
                                         " --help`); none with --saved.", show_default=False)]
    = "",
    owner: Annotated[str, typer.Option(help="Who owns the review (a user name of the"
                                       " server).")] = "",
    saved: Annotated[int | None, typer.Option(
        help="Review the owner's saved cohort with this number (the workbench's), its id list"
        " and term bundles included.")] = None,
    workbench: Store = DEFAULT_STORE,
    name: Annotated[str, typer.Option(help="The review's name.")] = "",
    size: Annotated[int, typer.Option(help="Members to sample; 0: every member.")] = 10,
    seed: Annotated[int, typer.Option(help="Seed of the draw (the same seed draws the same"
                                      " members).")] = 26,
    strata: Annotated[str, typer.Option(help="none, section (of the evidence sentence), year,"
                                        " or tier (as ranked search reads the query; the"
                                        " non-members too): each stratum gets its share.")
                      ] = "none",
    nonmembers: Annotated[int, typer.Option(help="Also sample this many non-members that"
                                            " mention the finding (recall).")] = 0,
    reviewer: Annotated[list[str] | None, typer.Option(
        help="Another user who may judge (repeat); viewers listed see figures only.")] = None,
    second_reviewer: Annotated[bool, typer.Option(
        "--second-reviewer", help="Each report counts once two reviewers judged it.")] = False,
    open_review: Annotated[bool, typer.Option(
        "--open", help="Not blind: reviewers see the engine's reading.")] = False,
) -> None:
    from clinsearch import Index
    from clinsearch.evaluate.chart_review import STRATA
    from clinsearch.search.cohort import Cohort
    from clinsearch.search.tiers import saved_options
    from clinsearch.server.reviews import start_review
    from clinsearch.server.workbench_store import WorkbenchStore

    if strata not in STRATA:
        raise ClinsearchError(f"--strata: one of {', '.join(STRATA)}")
    if not owner:
        raise ClinsearchError("--owner: name the review's owner")
    page = {"query": query, "level": "report"}
    if saved is not None:
        bench = WorkbenchStore(workbench)
        found = bench.saved_item(owner, saved)
        bench.close()
        if found is None or found.kind != "cohort":
            raise ClinsearchError(f"--saved: {owner} has no saved cohort {saved}")
        page, name = found.state, name or found.name
    elif not query:
        raise ClinsearchError("QUERY: give a cohort query, or --saved")
    index = Index.open(index_dir)
    cohort = Cohort(index, saved_options(page))
    scope = _scope(cohort, workbench, owner, page)
    store = _store(workbench)
    review = start_review(
        store, index, cohort, owner, page["query"], scope, page, index.generation.path.name,
        name=name, size=size or None, seed=seed, strata=strata,  # type: ignore[arg-type]
        nonmembers=nonmembers, blind=not open_review, required=2 if second_reviewer else 1,
        reviewers=reviewer or [])
    console.print(f"review {review.id}: {review.members} members, sample drawn", highlight=False)
    for item in store.state(review).items:
        console.print(escape(printable(item.report_id)), highlight=False)
    store.close()


@review_app.command("list", help="Every review in the store with its precision.")
def list_command(workbench: Store = DEFAULT_STORE) -> None:
    store = _store(workbench)
    for review in store.reviews():
        figures = store.state(review).figures()
        console.print(escape(printable(
            f"{review.id}\t{review.name}\t{review.owner}\t{review.query}\t"
            f"{figures.lines()[0]}")), highlight=False)


@review_app.command("judge", help="Record a reviewer's verdict on a sampled report: meets,"
                    " does_not_meet or cannot_tell, with a short note (never report text).")
def judge_command(
    review_id: ReviewId,
    report_id: SampledReport,
    verdict: Verdict,
    reviewer: Annotated[str, typer.Option(help="Who judges (the owner or a listed user).")],
    note: Annotated[str, typer.Option(help="Why (e.g. 'hedge', 'negated').")] = "",
    workbench: Store = DEFAULT_STORE,
) -> None:
    store, state = _state(workbench, review_id)
    if not state.review.may_see(reviewer):
        raise ClinsearchError(f"--reviewer: {reviewer} is not listed on review {review_id}")
    try:
        store.judge(state.review, report_id, reviewer, verdict, note)
    except LookupError as exc:
        raise ClinsearchError(str(exc)) from None
    console.print(store.state(state.review).figures().lines()[0], highlight=False)


@review_app.command("show", help="A review's figures: precision with its Wilson 95% interval,"
                    " Cohen's kappa, the recall estimate, and the exact counts at the draw.")
def show_command(review_id: ReviewId, workbench: Store = DEFAULT_STORE,
                 as_json: Annotated[bool, typer.Option("--json", help="As JSON.")] = False
                 ) -> None:
    import json

    state = _read(workbench, review_id)
    figures = state.figures()
    if as_json:
        console.print_json(json.dumps(asdict(figures)))
        return
    r = state.review
    console.print(escape(printable(f"review {r.id}: {r.name} - cohort {r.query}")),
                  highlight=False)
    console.print("exact counts at the draw: " + ", ".join(
        f"{k} {v}" for k, v in r.counts.items()), highlight=False)
    for line in figures.lines():
        console.print(line, highlight=False)


@review_app.command("disagreements", help="Reports the reviewers judged differently, with each"
                    " verdict, for the owner to settle (review adjudicate).")
def disagreements_command(review_id: ReviewId, workbench: Store = DEFAULT_STORE) -> None:
    state = _read(workbench, review_id)
    for item, verdicts in state.disagreements():
        console.print(escape(printable(item.report_id + "\t" + ", ".join(
            f"{who}: {v}" for who, v in verdicts.items()))), highlight=False)


@review_app.command("adjudicate", help="Settle a sampled report's verdict (the owner).")
def adjudicate_command(
    review_id: ReviewId,
    report_id: SampledReport,
    verdict: Verdict,
    note: Annotated[str, typer.Option(help="Why.")] = "",
    workbench: Store = DEFAULT_STORE,
) -> None:
    store, state = _state(workbench, review_id)
    try:
        store.adjudicate(state.review, report_id, state.review.owner, verdict, note)
    except LookupError as exc:
        raise ClinsearchError(str(exc)) from None
    console.print(store.state(state.review).figures().lines()[0], highlight=False)


@review_app.command("rejected", help="Members judged not to meet, with the evidence sentence's"
                    " id, the finding as matched, its trigger and the reason; --export writes"
                    " them as CSV without report text.")
def rejected_command(
    review_id: ReviewId, index_dir: IndexDir, workbench: Store = DEFAULT_STORE,
    export: Annotated[Path | None, typer.Option(help="Write the rejected ids to this CSV.")]
    = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --export.")] = False,
) -> None:
    from clinsearch import Index
    from clinsearch.exports import check_export_path, open_export
    from clinsearch.server.reviews import rejected, rejected_rows

    if export:
        check_export_path(export, force)
    state = _read(workbench, review_id)
    found = rejected(state, Index.open(index_dir))
    if export:
        with open_export(export, force=force, newline="") as out:
            csv.writer(out).writerows(rejected_rows(found))
    for r in found:
        console.print(escape(printable(f"{r.report_id}\t{r.sentence_id}\t{r.matched}\t"
                                       f"{r.trigger}\t{r.reason}")), highlight=False)


@review_app.command("rerun", help="Rerun the reviewed cohort on the index's live generation:"
                    " members that left or entered since the draw, sampled ones included.")
def rerun_command(review_id: ReviewId, index_dir: IndexDir,
                  workbench: Store = DEFAULT_STORE) -> None:
    from clinsearch import Index
    from clinsearch.search.cohort import Cohort
    from clinsearch.search.tiers import saved_options
    from clinsearch.server.reviews import changes

    state = _read(workbench, review_id)
    r = state.review
    cohort = Cohort(Index.open(index_dir), saved_options(r.state))
    members = cohort.members(r.query, "report", _scope(cohort, workbench, r.owner, r.state))
    shown = changes(r, [i.report_id for i in state.items if i.kind == "member"],
                    [m.report_id for m in members])
    console.print(f"members then {shown['members_then']}, now {shown['members_now']}",
                  highlight=False)
    for key in ("entered", "left", "sampled_left"):
        console.print(escape(printable(f"{key}: " + " ".join(shown[key]))), highlight=False)


@review_app.command("export", help="The reviewed cohort as CSV: '#' lines with the review, the"
                    " cohort definition, the index generations, the date and the figures, then"
                    " the members as `cohort --export` writes them.")
def export_command(
    review_id: ReviewId, index_dir: IndexDir,
    out: Annotated[Path, typer.Option(help="The CSV file to write.")],
    workbench: Store = DEFAULT_STORE,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out.")] = False,
) -> None:
    from clinsearch import Index
    from clinsearch.exports import check_export_path, open_export
    from clinsearch.search.cohort import Cohort
    from clinsearch.search.tiers import saved_options
    from clinsearch.server.reviews import export_text

    check_export_path(out, force)
    state = _read(workbench, review_id)
    r = state.review
    level = r.state.get("level", "patient")
    index = Index.open(index_dir)
    cohort = Cohort(index, saved_options(r.state))
    members = cohort.members(r.query, level,  # type: ignore[arg-type]
                             _scope(cohort, workbench, r.owner, r.state))
    with open_export(out, force=force, newline="") as handle:
        handle.writelines(export_text(state, members, level, index.generation.path.name,
                                      datetime.now(UTC).isoformat(timespec="seconds")))
    console.print(f"wrote {len(members)} members and the review's figures to"
                  f" {escape(str(out))}", highlight=False)
