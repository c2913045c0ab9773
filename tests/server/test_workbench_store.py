"""The workbench store on its own: private file, history kept bounded, bundles by folded name,
CSV id lists read strictly."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from clinsearch.errors import InputError
from clinsearch.server.workbench_store import HISTORY_KEPT, WorkbenchStore, read_id_csv


def test_history_keeps_the_latest_entries_per_user(tmp_path: Path) -> None:
    store = WorkbenchStore(tmp_path / "private" / "wb.sqlite")
    for n in range(HISTORY_KEPT + 20):
        store.remember("a", "search", {"q": str(n)}, {"total": n})
    store.remember("b", "cohort", {"query": "x"}, {"patient": 1})
    kept = store.history("a", limit=10 * HISTORY_KEPT)
    assert len(kept) == HISTORY_KEPT and kept[0].state == {"q": str(HISTORY_KEPT + 19)}
    assert [h.state for h in store.history("b")] == [{"query": "x"}]
    assert stat.S_IMODE((tmp_path / "private" / "wb.sqlite").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "private").stat().st_mode) == 0o700


def test_bundle_names_compare_folded_and_own_ones_win(tmp_path: Path) -> None:
    store = WorkbenchStore(tmp_path / "wb.sqlite")
    store.save_bundle("b", "Heart failure", ["chf"], shared=True)
    store.save_bundle("a", "heart-failure", ["cardiomegaly"], shared=False)
    assert store.bundle_terms_for("a") == {"heartfailure": ["cardiomegaly"]}
    assert store.bundle_terms_for("c") == {"heartfailure": ["chf"]}
    store.save_bundle("a", "HEART FAILURE", ["x", " x ", "y"], shared=False)  # replaced
    assert [b.terms for b in store.bundles("a") if b.owner == "a"] == [["x", "y"]]
    with pytest.raises(LookupError):
        store.delete_bundle("c", "heart failure")
    with pytest.raises(InputError, match="field 'name'"):
        store.save_bundle("a", " -- ", ["x"], shared=False)


def test_id_csv_takes_the_first_column_once_each(tmp_path: Path) -> None:
    assert read_id_csv("Patient ID,age\nP1,40\nP2\n\nP1\n", "f.csv") == ["P1", "P2"]
    assert read_id_csv("P7\nP8") == ["P7", "P8"]  # no header
    exported = ("# cohort definition: x; level patient\r\n# tiers counted: stated\r\n"
                "patient_id\r\nP3\r\n")
    assert read_id_csv(exported) == ["P3"]  # a cohort export, read back as an id list
    with pytest.raises(InputError, match=r"^f\.csv, line 1: no ids in the first column$"):
        read_id_csv("patient_id\n,\n", "f.csv")
