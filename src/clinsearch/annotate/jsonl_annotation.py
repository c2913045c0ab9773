"""Annotate JSON Lines files: ``{"id", "text", "targets"?}`` in, ``{"id", "findings"}`` out.

Bad input lines raise InputError naming the file, line and field; the output is written to a
temporary file and renamed into place, so a failure never leaves a half-written output.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.finding import Finding
from clinsearch.errors import InputError
from clinsearch.exports import open_export
from clinsearch.jsonl import json_line, read_json_lines


@dataclass(frozen=True, slots=True)
class Request:
    """One input line: an id, the text to annotate and optional extra target phrases."""

    id: str
    text: str
    targets: tuple[str, ...]
    line: int


def read_requests(path: Path) -> Iterator[Request]:
    """Parse and validate an input JSONL file line by line (blank lines are skipped)."""
    for number, obj in read_json_lines(path):
        yield parse_request(obj, path, number)


def parse_request(obj: dict[str, Any], path: Path, number: int) -> Request:
    """One input object as a Request, or an InputError naming the line and field."""
    if "id" not in obj or not isinstance(obj["id"], str | int) or isinstance(obj["id"], bool):
        raise InputError("missing or not a string", file=path, line=number, field="id")
    if not isinstance(obj.get("text"), str):
        raise InputError("missing or not a string", file=path, line=number, field="text")
    targets = obj.get("targets", [])
    if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
        raise InputError("must be a list of strings", file=path, line=number, field="targets")
    return Request(str(obj["id"]), obj["text"], tuple(targets), number)


def finding_to_dict(finding: Finding) -> dict[str, object]:
    """A finding as the JSON object of the output format."""
    return {
        "concept": finding.concept,
        "type": finding.type,
        "text": finding.text,
        "start": finding.start,
        "end": finding.end,
        "polarity": finding.polarity,
        "context": list(finding.context),
        "modifiers": [
            {
                "category": m.category,
                "value": m.value,
                "text": m.text,
                "start": m.start,
                "end": m.end,
            }
            for m in finding.modifiers
        ],
        "pattern": finding.pattern,
        "trigger": None if finding.trigger is None else asdict(finding.trigger),
    }


def annotate_jsonl(
    annotator: Annotator,
    input_path: str | Path,
    output_path: str | Path,
    batch_size: int = 256,
    progress: Callable[[int], None] | None = None,
    force: bool = False,
    read_report: Callable[[str], list[Finding]] | None = None,
) -> int:
    """Annotate each line of ``input_path`` into ``output_path``; returns the count. The
    output is an export (see ``open_export``): atomic, private, overwritten only if ``force``.
    With ``read_report`` each text is read by it as a whole report (sections, sentences and
    the report-level reading; offsets into the text), and a line with ``targets`` is refused.
    """
    input_path, output_path = Path(input_path), Path(output_path)
    requests = read_requests(input_path)
    count = 0
    with open_export(output_path, force=force) as out:
        while batch := list(islice(requests, batch_size)):
            if read_report is None:
                results = annotator.annotate_many(
                    [r.text for r in batch], [r.targets for r in batch], batch_size
                )
            else:
                for r in batch:
                    if r.targets:
                        raise InputError("extra targets apply to single texts, not to whole"
                                         " reports (--report)", file=input_path, line=r.line,
                                         field="targets")
                results = [read_report(r.text) for r in batch]
            for request, findings in zip(batch, results, strict=True):
                record = {"id": request.id, "findings": [finding_to_dict(f) for f in findings]}
                out.write(json_line(record) + "\n")
            count += len(batch)
            if progress is not None:
                progress(len(batch))
    return count
