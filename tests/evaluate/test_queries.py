"""Queries TSV: header optional, kind column optional (inferred from "no M"), clear errors."""

from __future__ import annotations

import pytest

from clinsearch.errors import InputError
from clinsearch.query_file import Query, write_queries
from clinsearch.query_file import read_benchmark_queries as read_queries


def test_round_trip_with_header(tmp_path):
    qs = [Query("1", "pleural effusion", "core"), Query("2", "no pneumothorax", "negative")]
    write_queries(tmp_path / "q.tsv", qs)
    assert (tmp_path / "q.tsv").read_text().splitlines()[0] == "qid\tquery\tkind"
    assert read_queries(tmp_path / "q.tsv") == qs


def test_kind_inferred_without_column(tmp_path):
    (tmp_path / "q.tsv").write_text("1\tcardiomegaly\n2\tNo focal consolidation\n")
    assert [q.kind for q in read_queries(tmp_path / "q.tsv")] == ["positive", "negative"]


@pytest.mark.parametrize(
    ("text", "line", "field"),
    [
        ("1\tedema\n1\tfluid\n", 2, "qid"),
        ("qid\tquery\n1\n", 2, None),
        ("1\t \n", 1, "query"),
        ("\tedema\n", 1, "qid"),
    ],
)
def test_bad_query_files(tmp_path, text, line, field):
    (tmp_path / "q.tsv").write_text(text)
    with pytest.raises(InputError) as err:
        read_queries(tmp_path / "q.tsv")
    assert (err.value.line, err.value.field) == (line, field)


def test_query_text_with_tab_cannot_be_written(tmp_path):
    with pytest.raises(InputError, match="tab"):
        write_queries(tmp_path / "q.tsv", [Query("1", "a\tb")])
