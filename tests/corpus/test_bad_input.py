"""Each bad-input case raises an InputError naming file, line and field, or skip_bad counts it."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch.corpus.readers import ReadStats, read_reports
from clinsearch.errors import InputError


def _error(path: Path, fmt: str, **options: object) -> InputError:
    with pytest.raises(InputError) as caught:
        list(read_reports(path, fmt, **options))
    return caught.value


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "txt-dir", "iu-xray", "mimic-notes"])
def test_missing_file(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "absent.csv"
    with pytest.raises(InputError, match="no such file") as caught:
        read_reports(path, fmt)  # raised at once, before iteration
    assert caught.value.file == str(path)


def test_unknown_format_lists_the_known_ones(write) -> None:
    path = write("r.csv", "id,text\n1,a\n")
    with pytest.raises(InputError) as caught:
        read_reports(path, "xml")
    message = str(caught.value)
    assert "'xml'" in message
    for known in ("csv", "jsonl", "txt-dir", "iu-xray", "mimic-notes"):
        assert known in message


def test_unknown_option_is_named(write) -> None:
    path = write("r.jsonl", "")
    with pytest.raises(InputError, match="id_column"):
        read_reports(path, "jsonl", id_column="rid")


def test_missing_columns_at_the_header_line(write) -> None:
    path = write("r.csv", "rid,body\n1,Fine.\n")
    error = _error(path, "csv", id_column="rid", text_columns="text")
    assert (error.file, error.line, error.field) == (str(path), 1, "text")
    assert str(error).startswith(f"{path}:1: field 'text': missing column")
    iu = write("iu.csv", "uid,findings\n1,x\n")
    assert _error(iu, "iu-xray").field == "impression"
    mimic = write("n.csv", "ROW_ID,TEXT\n1,x\n")
    assert _error(mimic, "mimic-notes").field == "SUBJECT_ID"


def test_empty_file_has_no_header(write) -> None:
    error = _error(write("r.csv", ""), "csv")
    assert error.line == 1 and "header" in str(error)


def test_undecodable_bytes_name_the_line(write) -> None:
    path = write("r.csv", b'id,text\n1,Fine.\n2,"Two\nlines \xff here"\n')
    error = _error(path, "csv")
    assert (error.line, error.field) == (4, "text") and "undecodable" in str(error)
    lines = write("r.jsonl", b'{"id": "1", "text": "ok"}\n{"id": "2", "text": "\xe9"}\n')
    assert _error(lines, "jsonl").line == 2
    write("d/a.txt", b"Line one.\nLine \xfe two.\n")
    error = _error(lines.parent / "d", "txt-dir")
    assert error.line == 2 and error.file.endswith("a.txt")


def test_empty_text_names_line_and_field(write) -> None:
    path = write("r.csv", "id,text\n1,Fine.\n2,   \n")
    error = _error(path, "csv")
    assert (error.line, error.field) == (3, "text") and "empty text" in str(error)
    iu = write("iu.csv", "uid,MeSH,findings,impression\n5,normal,,\n")
    error = _error(iu, "iu-xray")
    assert error.line == 2 and error.field == "findings,impression"
    lines = write("r.jsonl", '{"id": "1", "text": ""}\n')
    assert _error(lines, "jsonl").field == "text"


def test_duplicate_ids_name_both_lines(write) -> None:
    path = write("r.csv", "id,text\n1,A.\n2,B.\n1,C.\n")
    error = _error(path, "csv")
    assert (error.line, error.field) == (4, "id")
    assert "duplicate id '1'" in str(error) and "first at line 2" in str(error)
    lines = write("r.jsonl", '{"id": "3", "text": "a"}\n{"id": "3", "text": "b"}\n')
    assert "first at line 1" in str(_error(lines, "jsonl"))


def test_malformed_json(write) -> None:
    path = write("r.jsonl", '{"id": "1", "text": "ok"}\n{"id": "2", "text": \n')
    error = _error(path, "jsonl")
    assert error.line == 2 and "malformed JSON" in str(error)
    assert _error(write("a.jsonl", '["not", "an object"]\n'), "jsonl").line == 1
    missing = _error(write("b.jsonl", '{"text": "no id"}\n'), "jsonl")
    assert (missing.line, missing.field) == (1, "id")


def test_bad_date_names_the_field(write) -> None:
    path = write("r.csv", "id,text,day\n1,Fine.,yesterday\n")
    error = _error(path, "csv", date_column="day")
    assert (error.line, error.field) == (2, "day") and "yesterday" in str(error)


def test_skip_bad_counts_by_reason(write) -> None:
    path = write(
        "r.jsonl",
        b'{"id": "1", "text": "Fine."}\n'
        b'{"id": "2", "text": ""}\n'
        b'{"id": "1", "text": "Again."}\n'
        b"{oops\n"
        b'{"id": "3", "text": "\xff"}\n'
        b'{"id": "4", "text": "Bad date.", "date": "31/31/2020"}\n'
        b'{"id": "5", "text": "Also fine."}\n',
    )
    stats = ReadStats()
    reports = list(read_reports(path, "jsonl", skip_bad=True, stats=stats))
    assert [r.id for r in reports] == ["1", "5"]
    assert stats.reports == 2
    assert stats.skipped == {
        "empty text": 1,
        "duplicate id": 1,
        "malformed JSON": 1,
        "undecodable bytes": 1,
        "bad date": 1,
    }
    assert stats.skipped_total == 5
    assert stats.examples[0].startswith(f"{path}:2: field 'text'")


def test_skip_bad_still_stops_on_file_level_errors(write) -> None:
    path = write("r.csv", "rid,text\n1,a\n")
    with pytest.raises(InputError, match="missing column"):
        list(read_reports(path, "csv", skip_bad=True))


def test_skip_bad_csv_continues_after_undecodable_and_duplicate_rows(write) -> None:
    path = write("r.csv", b"id,text\n1,\xff bad\n2,Good.\n2,Again.\n3,Also good.\n")
    stats = ReadStats()
    reports = list(read_reports(path, "csv", skip_bad=True, stats=stats))
    assert [r.id for r in reports] == ["2", "3"]
    assert [r.source for r in reports] == [f"{path}:3", f"{path}:5"]
    assert stats.skipped == {"undecodable bytes": 1, "duplicate id": 1}
