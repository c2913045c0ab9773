"""The ``csv`` reader: a headed CSV file whose columns the user maps to report fields."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from clinsearch.corpus.model import Report
from clinsearch.corpus.readers.records import ReadContext, RecordError, make_report
from clinsearch.corpus.readers.textio import read_csv_rows


def read_csv(
    path: Path,
    seen: ReadContext,
    *,
    id_column: str = "id",
    text_columns: str | Sequence[str] = ("text",),
    patient_column: str | None = None,
    visit_column: str | None = None,
    type_column: str | None = None,
    date_column: str | None = None,
) -> Iterator[Report | RecordError]:
    """Stream reports from a CSV file; unmapped columns go to metadata.

    Several text columns (a list, or one comma-separated string) are joined, each under its
    column name as an upper-case heading ("FINDINGS: ..."), skipping empty ones.
    """
    texts = (
        [c.strip() for c in text_columns.split(",")]
        if isinstance(text_columns, str)
        else list(text_columns)
    )
    optional = {"patient": patient_column, "visit": visit_column, "type": type_column}
    optional["date"] = date_column
    mapped = [id_column, *texts, *(c for c in optional.values() if c)]
    fields = {"id": id_column, "text": ",".join(texts), "date": date_column or "date"}
    for row in read_csv_rows(path, mapped):
        if isinstance(row, RecordError):
            yield row
            continue
        values = row.values
        try:
            result: Report | RecordError = make_report(
                file=path,
                line=row.line,
                report_id=values[id_column],
                text=join_text(texts, values),
                fields=fields,
                patient_id=_get(values, patient_column),
                visit_id=_get(values, visit_column),
                type_=_get(values, type_column),
                date_value=_get(values, date_column),
                metadata={k: v for k, v in values.items() if k not in mapped and v},
                seen=seen,
            )
        except RecordError as error:
            result = error
        yield result


def join_text(columns: Sequence[str], values: dict[str, str]) -> str:
    """One column's text as is; several joined as "NAME: text" lines, skipping empty ones."""
    if len(columns) == 1:
        return values[columns[0]]
    parts = [(c, values[c].strip()) for c in columns]
    return "\n".join(f"{name.upper()}: {text}" for name, text in parts if text)


def _get(values: dict[str, str], column: str | None) -> str:
    """The value of an optional mapped column ("" when unmapped)."""
    return values[column] if column else ""
