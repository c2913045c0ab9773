"""Issue 27: attacks through the readers and the command line (an unclosed CSV quote, deep or
undecodable JSON, a huge JSON line, bytes that are not UTF-8 in arguments, a users file
others may write), each answered with one line and exit 2, never a traceback or wrong data."""

from __future__ import annotations

import json
import shutil
import tracemalloc
from pathlib import Path

import pytest

from clinsearch.jsonl import MAX_RECORD_BYTES, bounded_lines

from .hostile import one_line_error, run

CSV_INDEX = ("-f", "csv", "--id-column", "note_id", "--patient-column", "patient")


@pytest.mark.parametrize(("rows", "why"), [
    pytest.param("B2,bob,Small effusion.\nC3,carol,Clear lungs.\n", "never closed",
                 id="open-to-the-end"),
    pytest.param('B2,bob,"Small effusion."\nC3,carol,Clear lungs.\n', "closes on line 3",
                 id="closed-rows-later"),
    pytest.param('B2,bob,Bob has a pleural effusion.\nC3,carol,Carol has a nodule measuring'
                 ' 1"\nD4,dan,Clear lungs.\n', "field 'text': a quoted field opened in the"
                 " record on this line spans line 3, which starts like a new record",
                 id="closed-at-a-later-line-end"),  # issue 42, item 7
])
def test_an_unclosed_csv_quote_is_refused_at_its_line(tmp_path: Path, rows: str,
                                                      why: str) -> None:
    corpus = tmp_path / "notes.csv"
    corpus.write_text('note_id,patient,text\nA1,alice,"No pneumothorax.\n' + rows)
    code, _, err = run("index", corpus, "-o", tmp_path / "idx", *CSV_INDEX)
    line = one_line_error(code, err)
    assert f"{corpus}:2:" in line and why in line
    assert "Bob has" not in line and "nodule" not in line  # no report text in the message
    assert not (tmp_path / "idx").exists()


def test_multi_line_quoted_notes_still_read(tmp_path: Path) -> None:
    corpus = tmp_path / "notes.csv"
    corpus.write_text('note_id,patient,text\nA1,alice,"FINDINGS: clear lungs.\n'
                      'IMPRESSION: no ""acute"" disease, no effusion."\nB2,bob,Small effusion.\n')
    code, out, err = run("index", corpus, "-o", tmp_path / "idx", *CSV_INDEX)
    assert code == 0, err
    assert "indexed 2 reports" in out + err


def test_deep_or_undecodable_json_lines_are_one_line_errors(tmp_path: Path) -> None:
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"id": "a", "text": "x", "m": ' + "[" * 6000 + "]" * 6000 + "}\n")
    surrogate = tmp_path / "surrogate.jsonl"
    surrogate.write_text('{"id": "a", "text": "pneumonia \\ud800"}\n')
    for corpus, why in ((deep, "nested too deeply"), (surrogate, "surrogate")):
        code, _, err = run("index", corpus, "-o", tmp_path / corpus.stem, "-f", "jsonl")
        line = one_line_error(code, err)
        assert f"{corpus}:1" in line and why in line


def test_a_huge_json_line_is_refused_without_holding_it(tmp_path: Path) -> None:
    corpus = tmp_path / "huge.jsonl"
    with corpus.open("w") as out:
        out.write('{"id": "a", "text": "')
        chunk = "no acute disease " * 4096
        for _ in range(MAX_RECORD_BYTES // len(chunk) + 2):
            out.write(chunk)
        out.write('"}\n{"id": "b", "text": "ok"}\n')
    tracemalloc.start()
    with corpus.open("rb") as handle:
        lines = list(bounded_lines(handle))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert lines[0] is None and lines[1] == b'{"id": "b", "text": "ok"}\n'
    assert peak < 2 * MAX_RECORD_BYTES + (8 << 20)  # one bounded read, not the whole line
    code, _, err = run("index", corpus, "-o", tmp_path / "idx", "-f", "jsonl")
    line = one_line_error(code, err)
    assert "longer than 16 MiB" in line and f"{corpus}:1:" in line  # the file, not its fd


def test_arguments_that_are_not_utf8_are_one_line_errors(built_once: Path,
                                                         tmp_path: Path) -> None:
    # what Python makes of $'pneumonia\xff' and $'\xed\xa0\x80' in argv (surrogateescape)
    code, _, err = run("search", built_once, "pneumonia\udcff")
    assert "not UTF-8 text" in one_line_error(code, err)
    code, _, err = run("cohort", built_once, "\udced\udca0\udc80")
    assert "not UTF-8 text" in one_line_error(code, err)
    ids = tmp_path / "ids.txt"
    ids.write_text('"r1\\ud800"\n')
    copy = tmp_path / "idx"
    shutil.copytree(built_once, copy, symlinks=True)
    code, _, err = run("delete", copy, "--ids-file", ids)
    line = one_line_error(code, err)
    assert f"{ids}:1" in line and "not UTF-8 text" in line


def test_non_finite_weights_are_refused(built_once: Path) -> None:
    for weight in ("nan", "inf"):
        code, _, err = run("search", built_once, "pneumonia", "--method",
                           f"hybrid:methods=bm25,concept,weights=bm25={weight}")
        assert "finite" in one_line_error(code, err)


def test_a_users_file_others_may_write_is_refused(tmp_path: Path) -> None:
    users = tmp_path / "users.json"
    code, _, err = run("users", "add", "ann", "--role", "admin", "--users", users)
    assert code == 0, err
    users.chmod(0o666)
    code, _, err = run("users", "list", "--users", users)
    assert "others may change the users file" in one_line_error(code, err)
    users.chmod(0o620)
    code, _, err = run("users", "list", "--users", users)
    assert "mode 620" in one_line_error(code, err)
    users.chmod(0o600)
    code, out, err = run("users", "list", "--users", users)
    assert code == 0 and "expires 20" in out
    data = json.loads(users.read_text())
    assert data["users"][0]["expires"] > data["users"][0]["created"]
