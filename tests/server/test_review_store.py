"""The review store on its own: private file, a sample fixed once drawn, values bound as
parameters, bad notes refused with nothing stored, and writes that stay visible to other
processes while the workbench shares the file (as in the server)."""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from clinsearch.errors import InputError
from clinsearch.evaluate.chart_review import Drawn, Item
from clinsearch.server.review_store import ReviewStore
from clinsearch.server.workbench_store import WorkbenchStore

DRAWN = Drawn((Item("R1", "member", "", "R1#1"), Item("R2", "member", "", "R2#3"),
               Item("N1", "nonmember")), members=5, nonmember_pool=9, counts={"report": 5})


def create(store: ReviewStore, **options: object) -> object:
    return store.create("ann", "", "pneumonia", {"query": "pneumonia"}, DRAWN,
                        ["R1", "R2", "R3", "R4", "R5"], ["pneumonia"], seed=1, size=2,
                        strata="none", **options)  # type: ignore[arg-type]


def test_a_review_is_kept_private_and_fixed(tmp_path: Path) -> None:
    path = tmp_path / "private" / "wb.sqlite"
    store = ReviewStore(path)
    review = create(store, reviewers=["bob", "ann", "bob"])
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert review.reviewers == ["bob"] and review.name == "review of pneumonia"
    state = store.state(review)
    assert sorted(i.report_id for i in state.items) == ["N1", "R1", "R2"]
    assert store.state(store.review(review.id)).items == state.items  # same order, kept
    assert store.reviews("carol") == [] and store.reviews("bob") == [review]


def test_values_are_bound_and_bad_notes_leave_nothing(tmp_path: Path) -> None:
    store = ReviewStore(tmp_path / "wb.sqlite")
    review = create(store)
    sneaky = "x'); DROP TABLE review_judgments; --"
    store.judge(review, "R1", sneaky, "meets", sneaky)
    assert store.state(review).judgments[0].note == sneaky
    for note in ("a\x00b", "a\u202eb", "a\u2066b", "x" * 501):
        with pytest.raises(InputError, match="field 'note'"):
            store.judge(review, "R2", "ann", "meets", note)
    with pytest.raises(InputError, match="field 'verdict'"):
        store.judge(review, "R2", "ann", "probably", "")
    with pytest.raises(LookupError):
        store.judge(review, "R9", "ann", "meets", "")
    assert [j.report_id for j in store.state(review).judgments] == ["R1"]
    with pytest.raises(InputError, match="second reviewer"):
        create(store, required=2)


def test_writes_stay_visible_to_other_processes_beside_the_workbench(tmp_path: Path) -> None:
    path = tmp_path / "wb.sqlite"
    WorkbenchStore(path)  # the server holds the workbench's connection open, then the reviews'
    store = ReviewStore(path)
    review = create(store)
    reader = ("import sqlite3, sys; db = sqlite3.connect(sys.argv[1]);"
              " print(db.execute('SELECT count(*) FROM review_judgments').fetchone()[0])")
    # another process (``clinsearch review show``) opens and closes the file meanwhile
    subprocess.run([sys.executable, "-c", reader, str(path)], check=True)
    store.judge(review, "R1", "ann", "meets")
    seen = subprocess.run([sys.executable, "-c", reader, str(path)], check=True,
                          capture_output=True, text=True).stdout.strip()
    assert seen == "1"
    assert sqlite3.connect(path).execute("SELECT count(*) FROM review_judgments"
                                         ).fetchone()[0] == 1
