"""Items 5 and 6: control characters are shown, never obeyed; errors never carry report text."""

from __future__ import annotations

from pathlib import Path

from clinsearch.corpus.model import Report
from clinsearch.index import IndexStore
from clinsearch.terminal import printable, printable_runs

from .hostile import one_line_error, run

ESCAPE = "\x1b]0;pwned\x07\x1b[2J"


def test_printable_escapes_controls_and_bidi() -> None:
    assert printable("a\x1b[31mb\rc\u202ed") == "a\\x1b[31mb\\x0dc\\u202ed"
    assert printable("line\nnext\tcol", one_line=True) == "line\\x0anext\\x09col"
    assert printable_runs("ab\x07cd", [(1, 4)]) == [("a", False), ("b\\x07c", True), ("d", False)]


def test_search_and_cohort_tables_escape_report_text_and_ids(tmp_path: Path) -> None:
    reports = [Report(id=f"r1{ESCAPE}", text=f"Right lower lobe pneumonia {ESCAPE} noted.",
                      patient_id=f"p{ESCAPE}")]
    IndexStore.build(reports, tmp_path / "idx", progress=False)
    code, out, err = run("search", tmp_path / "idx", "pneumonia")
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out and "\\x1b" in out
    code, out, err = run("cohort", tmp_path / "idx", "pneumonia", "--show", "5")
    assert code == 0, err
    assert "\x1b" not in out and "\\x1b" in out


def test_a_corrupt_pointer_error_never_prints_its_content(index_dir: Path) -> None:
    phi = "Jane Doe, MRN 12345, pneumonia"
    (index_dir / "CURRENT").write_text("patient_id,report\n" + (phi + "\n") * 1000)
    line = one_line_error(*run("info", index_dir)[::2])
    assert "corrupt pointer" in line and "Jane" not in line


def test_error_values_are_cut_short(tmp_path: Path) -> None:
    text = "Jane Doe has a long history of pneumonia and many other things " * 5
    corpus = tmp_path / "r.csv"
    corpus.write_text(f'id,text,date\nr1,"No effusion.","{text}"\n', encoding="utf-8")
    line = one_line_error(*run("index", corpus, "-f", "csv", "--date-column", "date",
                               "--out", tmp_path / "idx")[::2])
    assert "cannot parse date" in line and text not in line and len(line) < 400


def test_ids_file_holding_report_text_is_not_echoed(index_dir: Path, tmp_path: Path) -> None:
    ids = tmp_path / "ids.txt"
    ids.write_text("Jane Doe was admitted with a right lower lobe pneumonia and sepsis\n")
    line = one_line_error(*run("delete", index_dir, "--ids-file", ids)[::2])
    assert "not in the index" in line and "sepsis" not in line
