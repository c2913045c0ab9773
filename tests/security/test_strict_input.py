"""Item 10: strict JSONL types, explicit date formats, txt-dir link rules, deletable odd ids."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinsearch.corpus.readers import ReadStats, read_reports
from clinsearch.errors import InputError
from clinsearch.index import IndexStore

from .hostile import one_line_error, run


@pytest.mark.parametrize(("line", "field", "kind"), [
    ({"id": 1, "text": "No effusion."}, "id", "a number"),
    ({"id": "a", "text": True}, "text", "a boolean"),
    ({"id": "a", "text": "x", "patient_id": ["p1"]}, "patient_id", "a list"),
    ({"id": "a", "text": "x", "date": {"y": 2020}}, "date", "an object"),
    ({"id": "a", "text": "x", "visit_id": 3.5}, "visit_id", "a number"),
])
def test_jsonl_fields_of_the_wrong_type_are_errors(tmp_path: Path, line: dict, field: str,
                                                  kind: str) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(line) + "\n" + json.dumps({"id": "ok", "text": "Clear."}) + "\n")
    with pytest.raises(InputError) as error:
        list(read_reports(path, "jsonl"))
    assert (error.value.line, error.value.field) == (1, field)
    assert f"expected a string, got {kind}" in str(error.value)
    stats = ReadStats()
    assert [r.id for r in read_reports(path, "jsonl", skip_bad=True, stats=stats)] == ["ok"]
    assert stats.skipped == {"wrong type": 1}


def test_dates_are_never_guessed(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    path.write_text("id,text,date\na,No effusion.,03/04/2020\nb,Clear.,01.02.2020\n")
    with pytest.raises(InputError, match="expected YYYY-MM-DD"):
        list(read_reports(path, "csv", date_column="date"))
    us = list(read_reports(path, "csv", date_column="date", date_format="%m/%d/%Y",
                           skip_bad=True))
    assert [(r.id, r.date) for r in us] == [("a", "2020-03-04")]
    german = list(read_reports(path, "csv", date_column="date", date_format="%d.%m.%Y",
                               skip_bad=True))
    assert [(r.id, r.date) for r in german] == [("b", "2020-02-01")]
    with pytest.raises(InputError, match="needs %d, %m"):
        read_reports(path, "csv", date_column="date", date_format="%Y")
    code, _, err = run("index", path, "-f", "csv", "--date-column", "date", "--date-format",
                       "%m/%d/%Y", "--skip-bad", "--out", tmp_path / "idx")
    assert code == 0 and "1 bad date" in err, err


def test_txt_dir_does_not_follow_links_out_or_read_a_file_twice(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("Another patient's pneumonia.")
    folder = tmp_path / "notes"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_text("Right lower lobe pneumonia.")
    (folder / "sub" / "b.txt").write_text("No effusion.")
    (folder / "alias.txt").symlink_to(folder / "a.txt")  # the same file again
    (folder / "leak.txt").symlink_to(outside / "secret.txt")
    (folder / "leakdir").symlink_to(outside)
    (folder / "sub" / "up").symlink_to(folder)  # a loop back up
    stats = ReadStats()
    reports = list(read_reports(folder, "txt-dir", skip_bad=True, stats=stats))
    assert sorted(r.id for r in reports) == ["a", "sub/b"]
    assert stats.skipped == {"duplicate file": 1, "unreadable file": 2}
    assert all("secret" not in r.text and "Another" not in r.text for r in reports)
    line = one_line_error(*run("index", folder, "-f", "txt-dir", "--out", tmp_path / "i")[::2])
    assert "a.txt" in line or "leak" in line


def test_ids_with_commas_and_newlines_can_be_deleted(tmp_path: Path) -> None:
    corpus = tmp_path / "r.jsonl"
    rows = [{"id": "a,b", "text": "Pneumonia."}, {"id": "c\nd", "text": "No effusion."},
            {"id": "plain", "text": "Cardiomegaly."}]
    corpus.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = run("index", corpus, "-f", "jsonl", "--out", tmp_path / "idx")
    assert code == 0, err
    ids = tmp_path / "ids.txt"
    ids.write_text('"a,b"\n"c\\nd"\n')
    code, _, err = run("delete", tmp_path / "idx", "--ids-file", ids)
    assert code == 0, err
    assert IndexStore.open(tmp_path / "idx").lookup.report_ids == ["plain"]
    ids.write_text('"unterminated\n')
    assert "bad JSON string" in one_line_error(
        *run("delete", tmp_path / "idx", "--ids-file", ids)[::2])
