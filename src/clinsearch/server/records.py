"""The JSON forms the routes answer with: hits with their sentence's findings, findings with
their pattern, and CSV text streamed in chunks."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from typing import Any

from clinsearch.annotate.finding import Finding
from clinsearch.hit import Hit
from clinsearch.server.live import Snapshot


def hit_records(hits: Sequence[Hit], snap: Snapshot) -> list[dict[str, Any]]:
    """Each hit's JSON form plus the findings of its best sentence (offsets into the
    sentence), read for all the hits at once."""
    findings = snap.findings.of_many([hit.sentence_id for hit in hits])
    return [hit.to_dict() | {"findings": [finding_record(f) for f in of_hit]}
            for hit, of_hit in zip(hits, findings, strict=True)]


def finding_record(finding: Finding) -> dict[str, Any]:
    """A finding's JSON form: its fields and its finding pattern."""
    return asdict(finding) | {"pattern": finding.pattern}


def csv_chunks(rows: Iterator[list[str]]) -> Iterator[str]:
    """CSV text in chunks of about 64 KiB, written as ``csv.writer`` writes a file."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    for row in rows:
        writer.writerow(row)
        if buffer.tell() > 65536:
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
    yield buffer.getvalue()
