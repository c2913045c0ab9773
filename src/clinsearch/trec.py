"""TREC run and qrels files: strict reading with located errors, atomic writing.

Run lines are ``qid Q0 docid rank score tag``; qrels lines are ``qid iteration docid grade``.
Within a query, documents are ranked as trec_eval ranks them: by score, highest first, ties
broken by document id in *descending* string order; the rank column is ignored on reading.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from clinsearch.errors import InputError
from clinsearch.exports import open_export
from clinsearch.user_files import open_user_file

RUN_FIELDS = ("qid", "Q0", "docid", "rank", "score", "tag")
QRELS_FIELDS = ("qid", "iteration", "docid", "relevance")
T = TypeVar("T")


@dataclass(frozen=True)
class Run:
    """A ranked run: ``scores[qid][docid] = score``; ``lines`` holds each query's first line."""

    name: str
    scores: dict[str, dict[str, float]]
    source: str = ""
    lines: dict[str, int] = field(default_factory=dict)

    def ranking(self, qid: str) -> list[str]:
        """The documents of ``qid`` in trec_eval order (score descending, then docid descending)."""
        return ranked(self.scores.get(qid, {}))


@dataclass(frozen=True)
class Qrels:
    """Relevance judgements: ``grades[qid][docid] = grade`` (> 0 relevant, <= 0 judged not)."""

    grades: dict[str, dict[str, int]]
    source: str = ""

    def relevant(self, qid: str) -> set[str]:
        """The documents judged relevant (grade > 0) for ``qid``."""
        return {d for d, g in self.grades.get(qid, {}).items() if g > 0}


def ranked(scores: Mapping[str, float]) -> list[str]:
    """Document ids in trec_eval order: score descending, ties by docid descending."""
    return sorted(scores, key=lambda d: (scores[d], d), reverse=True)


def _rows(path: Path, fields: tuple[str, ...]) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line number, columns)`` of a whitespace-separated file, checking column counts."""
    handle = io.TextIOWrapper(open_user_file(path), encoding="utf-8")
    with handle:
        try:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                cols = line.split()
                if len(cols) != len(fields):
                    raise InputError(
                        f"expected {len(fields)} columns ({' '.join(fields)}), found {len(cols)}",
                        file=path,
                        line=number,
                    )
                yield number, cols
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason})", file=path) from None


def _score(text: str) -> float:
    """A run score; ValueError (with the reason) when it is not a number."""
    try:
        score = float(text)
    except ValueError:
        raise ValueError(f"score {text!r} is not a number") from None
    if score != score:
        raise ValueError("score is NaN")
    return score


def _grade(text: str) -> int:
    """A relevance grade; ValueError (with the reason) when it is not an integer."""
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"relevance {text!r} is not an integer") from None


def _read_table(
    path: Path, fields: tuple[str, ...], parse: Callable[[str], T], twice: str
) -> tuple[dict[str, dict[str, T]], dict[str, int]]:
    """``{qid: {docid: value}}`` and each query's first line, from a run or qrels file.

    The value is the last column but one of a run (score) or the last of qrels (grade).
    """
    table: dict[str, dict[str, T]] = {}
    lines: dict[str, int] = {}
    column = fields.index("score" if "score" in fields else "relevance")
    for number, cols in _rows(path, fields):
        qid, docid = cols[0], cols[2]
        try:
            value = parse(cols[column])
        except ValueError as exc:
            raise InputError(str(exc), file=path, line=number, field=fields[column]) from None
        docs = table.setdefault(qid, {})
        lines.setdefault(qid, number)
        if docid in docs:
            raise InputError(
                f"document {docid!r} {twice} for query {qid!r}",
                file=path,
                line=number,
                field="docid",
            )
        docs[docid] = value
    if not table:
        raise InputError("file is empty", file=path)
    return table, lines


def read_run(path: str | Path, name: str | None = None) -> Run:
    """Read a TREC run file; the run is named ``name`` or the file's stem.

    Raises InputError on a wrong column count, a non-numeric score, or a document listed twice
    for the same query.
    """
    path = Path(path)
    scores, lines = _read_table(path, RUN_FIELDS, _score, "appears twice")
    return Run(name or path.stem, scores, str(path), lines)


def read_qrels(path: str | Path) -> Qrels:
    """Read a TREC qrels file; raises InputError on bad columns, grades or duplicates."""
    grades, _ = _read_table(Path(path), QRELS_FIELDS, _grade, "is judged twice")
    return Qrels(grades, str(path))


def _token(value: str) -> str:
    """``value`` checked to be usable as one column of a TREC file."""
    if not value or any(c.isspace() for c in value):
        raise InputError(f"id {value!r} is empty or contains whitespace; TREC files cannot hold it")
    return value


def run_line(qid: str, docid: str, rank: int, score: float, tag: str) -> str:
    """One TREC run line; the score keeps full precision (tie-breaks can be below 1e-6)."""
    return f"{_token(qid)} Q0 {_token(docid)} {rank} {float(score)!r} {tag}"


def format_run(scores: Mapping[str, Mapping[str, float]], tag: str) -> Iterator[str]:
    """TREC run lines for ``scores``, queries in given order, documents in trec_eval order."""
    for qid, docs in scores.items():
        for rank, docid in enumerate(ranked(docs), start=1):
            yield run_line(qid, docid, rank, docs[docid], tag)


def write_run(path: str | Path, run: Run, *, force: bool = False) -> None:
    """Write ``run`` as a TREC run file tagged with its name, as an export (replaced only if
    ``force``)."""
    with open_export(path, force=force) as out:
        out.writelines(
            line + "\n" for line in format_run(run.scores, run.name.replace(" ", "_") or "run"))


def write_qrels(path: str | Path, qrels: Qrels, *, force: bool = False) -> None:
    """Write ``qrels`` as a TREC qrels file (iteration column 0), as an export (replaced only
    if ``force``)."""
    with open_export(path, force=force) as out:
        out.writelines(
            f"{_token(qid)} 0 {_token(docid)} {int(grade)}\n"
            for qid, docs in qrels.grades.items()
            for docid, grade in docs.items()
        )
