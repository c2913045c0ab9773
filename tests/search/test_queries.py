"""Query files: header optional, extra columns ignored, every malformed line named."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch.errors import InputError
from clinsearch.query_file import Query, read_queries


def _write(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "q.tsv"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def test_plain_header_and_extra_columns(tmp_path: Path) -> None:
    plain = _write(tmp_path, "q1\tpleural effusion\nq2\tno pneumothorax\n")
    assert read_queries(plain) == [Query("q1", "pleural effusion"), Query("q2", "no pneumothorax")]
    headed = _write(tmp_path, "\ufeffqid\tquery\tnotes\n\nq1\t effusion \tignored\tmore\n")
    assert read_queries(headed) == [Query("q1", "effusion")]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("q1\teffusion\nq2 pneumothorax\n", r"q\.tsv:2: expected 'qid<TAB>query'"),
        ("\teffusion\n", r"q\.tsv:1: field 'qid': empty query id"),
        ("q 1\teffusion\n", r"q\.tsv:1: field 'qid': query id 'q 1' contains whitespace"),
        (
            "q1\teffusion\nq1\tedema\n",
            r"q\.tsv:2: field 'qid': duplicate query id 'q1' \(first at line 1\)",
        ),
        ("q1\t \n", r"q\.tsv:1: field 'query': empty query"),
        ("qid\tquery\n\n", r"q\.tsv: no queries in file"),
        (b"q1\teffusion\nq2\tn\xff\n", r"q\.tsv:2: undecodable bytes"),
    ],
)
def test_malformed(tmp_path: Path, content: str | bytes, message: str) -> None:
    with pytest.raises(InputError, match=message):
        read_queries(_write(tmp_path, content))


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing\.tsv: no such file or directory"):
        read_queries(tmp_path / "missing.tsv")
