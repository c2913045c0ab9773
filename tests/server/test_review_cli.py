"""``clinsearch review`` on its own: a review drawn on one generation, the index changed (a
member deleted, a new one added), and ``review rerun`` shows which members entered and left
while the sample stays as drawn; the export names both generations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from .conftest import clinsearch

QUERY = "pleural effusion"
NEW = {"id": "NEW-R1", "patient_id": "NEW", "visit_id": "NEW-V1", "type": "CXR",
       "date": "2024-01-02", "text": "FINDINGS: Large right pleural effusion.\n"
       "IMPRESSION: Right pleural effusion."}


def test_a_rerun_on_a_new_generation_shows_which_members_changed(
        sample_index: Path, tmp_path: Path) -> None:
    index, store = tmp_path / "index", tmp_path / "wb.sqlite"
    shutil.copytree(sample_index, index)
    drawn_on = (index / "CURRENT").read_text().strip()
    started = clinsearch("review", "start", str(index), QUERY, "--owner", "ann", "--size", "5",
                         "--seed", "4", "--workbench", str(store)).stdout.splitlines()
    sample = started[1:]
    assert len(sample) == 5
    corpus = tmp_path / "new.jsonl"
    corpus.write_text(json.dumps(NEW) + "\n")
    clinsearch("add", str(index), str(corpus), "--format", "jsonl")
    clinsearch("delete", str(index), "--ids", sample[0])
    out = clinsearch("review", "rerun", "1", str(index), "--workbench", str(store)).stdout
    assert f"entered: {NEW['id']}\n" in out
    assert f"left: {sample[0]}\n" in out and f"sampled_left: {sample[0]}\n" in out
    shown = clinsearch("review", "show", "1", "--workbench", str(store)).stdout
    assert "sampled members: 5 of " in shown  # the sample stays as drawn
    export = tmp_path / "out.csv"
    clinsearch("review", "export", "1", str(index), "--out", str(export), "--workbench",
               str(store))
    generations = next(line for line in export.read_text().splitlines()
                       if line.startswith("# index generation:"))
    now = (index / "CURRENT").read_text().strip()
    assert now != drawn_on
    assert generations == f"# index generation: drawn on {drawn_on}, exported from {now}"
    again = clinsearch("review", "export", "1", str(index), "--out", str(export),
                       "--workbench", str(store), check=False)
    assert again.returncode == 2 and "exists" in again.stderr  # never overwritten silently


def test_a_review_of_a_saved_cohort_counts_the_tiers_it_names(sample_index: Path,
                                                               tmp_path: Path) -> None:
    from clinsearch.server.workbench_store import WorkbenchStore

    store = tmp_path / "wb.sqlite"
    bench = WorkbenchStore(store)
    page = {"query": "pneumonia", "level": "report", "context": "indication"}
    saved = bench.save("ann", "with the reason for the exam", "cohort", page, {}, [])
    bench.close()
    started = clinsearch("review", "start", str(sample_index), "--saved", str(saved.id),
                         "--owner", "ann", "--size", "5", "--workbench", str(store)).stdout
    assert started.startswith("review 1: 28 members")  # 24 asserted + 4 only the reason
    export = tmp_path / "out.csv"
    clinsearch("review", "export", "1", str(sample_index), "--out", str(export),
               "--workbench", str(store))
    rows = [line for line in export.read_text().splitlines() if not line.startswith("#")]
    assert len(rows) == 1 + 28  # the header, the members of the widened cohort


def test_a_tier_stratified_review_spreads_members_and_nonmembers_over_the_tiers(
        sample_index: Path) -> None:
    """``--strata tier``: members fall in the tiers of mentions stated now, and the
    non-members that mention the finding are drawn from each tier (the reason for the exam,
    broader findings, none ranked search shows such as negated ones) in its share."""
    from collections import Counter

    from clinsearch import Index
    from clinsearch.evaluate.chart_review import UNRANKED, draw, mention_reader
    from clinsearch.search.cohort import Cohort
    from clinsearch.search.cohort.engine import EVERYWHERE
    from clinsearch.search.tiers import ASSERTED, report_tiers

    index = Index.open(sample_index)
    tiers = report_tiers(index.session, "pneumonia")
    drawn = draw(Cohort(index), "pneumonia", EVERYWHERE, 6, 4, "tier", 40,
                 mention_reader(index), tiers)
    members = {i.stratum for i in drawn.items if i.kind == "member"}
    assert members and members <= set(ASSERTED)
    others = Counter(i.stratum for i in drawn.items if i.kind == "nonmember")
    assert sum(others.values()) == 40 and {"indication", UNRANKED} <= set(others)
    pool = Counter(tiers.get(uid, UNRANKED) for uid in (
        {m.report_id for m in mention_reader(index).members("pneumonia", "report")}
        - {m.report_id for m in Cohort(index).members("pneumonia", "report")}))
    for tier, n in pool.items():  # each tier its share, by largest remainder
        assert abs(others[tier] - 40 * n / sum(pool.values())) < 1, (tier, others, pool)
