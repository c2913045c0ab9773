"""TREC run and qrels files: round trips and located errors for bad input."""

from __future__ import annotations

import pytest

from clinsearch.errors import InputError
from clinsearch.trec import Qrels, Run, read_qrels, read_run, write_qrels, write_run


def test_run_round_trip_keeps_trec_eval_order(tmp_path):
    run = Run("my run", {"q1": {"a": 1.0, "b": 2.5, "c": 1.0}, "q2": {"z": 0.1}})
    path = tmp_path / "r.run"
    write_run(path, run)
    lines = path.read_text().splitlines()
    assert lines[0] == "q1 Q0 b 1 2.5 my_run"
    assert [ln.split()[2] for ln in lines[:3]] == ["b", "c", "a"]  # tie: docid descending
    back = read_run(path)
    assert back.scores == run.scores
    assert back.name == "r"
    assert back.lines == {"q1": 1, "q2": 4}


def test_qrels_round_trip(tmp_path):
    qrels = Qrels({"q1": {"a": 2, "b": 0}, "q2": {"c": 1}})
    path = tmp_path / "x.qrels"
    write_qrels(path, qrels)
    assert read_qrels(path).grades == qrels.grades
    assert read_qrels(path).relevant("q1") == {"a"}


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        ("q Q0 d 1 1.0 t\nq Q0 e 2 1.0\n", 2, None, "expected 6 columns"),
        ("q Q0 d 1 high t\n", 1, "score", "not a number"),
        ("q Q0 d 1 nan t\n", 1, "score", "NaN"),
        ("q Q0 d 1 1 t\n\nq Q0 d 2 0.5 t\n", 3, "docid", "appears twice"),
    ],
)
def test_bad_run_lines(tmp_path, text, line, field, message):
    path = tmp_path / "bad.run"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as err:
        read_run(path)
    assert (err.value.file, err.value.line, err.value.field) == (str(path), line, field)
    assert f"bad.run:{line}" in str(err.value)


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        ("q 0 d\n", 1, None, "expected 4 columns"),
        ("q 0 d 1\nq 0 e 0.5\n", 2, "relevance", "not an integer"),
        ("q 0 d 1\nq 0 d 0\n", 2, "docid", "judged twice"),
    ],
)
def test_bad_qrels_lines(tmp_path, text, line, field, message):
    path = tmp_path / "bad.qrels"
    path.write_text(text)
    with pytest.raises(InputError, match=message) as err:
        read_qrels(path)
    assert (err.value.line, err.value.field) == (line, field)


def test_missing_empty_and_binary_files(tmp_path):
    with pytest.raises(InputError, match="no such file or directory"):
        read_run(tmp_path / "nope.run")
    (tmp_path / "empty.qrels").write_text("\n")
    with pytest.raises(InputError, match="is empty"):
        read_qrels(tmp_path / "empty.qrels")
    (tmp_path / "bin.run").write_bytes(b"q Q0 \xff\xfe 1 1 t\n")
    with pytest.raises(InputError, match="UTF-8"):
        read_run(tmp_path / "bin.run")


def test_ids_with_spaces_cannot_be_written(tmp_path):
    with pytest.raises(InputError, match="whitespace"):
        write_run(tmp_path / "r.run", Run("r", {"q 1": {"d": 1.0}}))
    assert not (tmp_path / "r.run").exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind
