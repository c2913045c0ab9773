"""The ``iu-xray`` reader: the Open-i (Indiana University) chest X-ray CSV.

Text is findings + impression only; MeSH, Problems, image, indication and comparison are kept as
metadata and never become searchable text.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from clinsearch.corpus.model import Report
from clinsearch.corpus.readers.csv_format import read_csv
from clinsearch.corpus.readers.records import ReadContext, RecordError

REPORT_TYPE = "chest x-ray"


def read_iu_xray(path: Path, seen: ReadContext) -> Iterator[Report | RecordError]:
    """Stream IU X-ray reports: id = uid, text = "FINDINGS: ...\\nIMPRESSION: ..."."""
    for item in read_csv(path, seen, id_column="uid", text_columns=("findings", "impression")):
        yield replace(item, type=REPORT_TYPE) if isinstance(item, Report) else item
