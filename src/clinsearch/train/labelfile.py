"""Read and write weak labels as JSON lines: one query per line, its variants and matched ids."""

from __future__ import annotations

from pathlib import Path

from clinsearch.errors import InputError
from clinsearch.jsonl import read_json_lines, write_json_lines
from clinsearch.train.labels import LabelSet, QueryKey, QueryLabel

_FIELDS = ("polarity", "concept", "name", "modifiers", "sentences")


def label_record(label: QueryLabel) -> dict[str, object]:
    """The JSON record of one query label."""
    key = label.key
    return {
        "qid": key.qid,
        "kind": key.kind,
        "text": key.text,
        "polarity": key.polarity,
        "concept": key.concept,
        "name": key.name,
        "modifiers": list(key.modifiers),
        "variants": list(key.variants()),
        "sentences": list(label.sentence_ids),
    }


def write_labels(path: Path, labels: LabelSet, *, force: bool = False) -> None:
    """Write one JSON line per query as an export (atomic, private, replaced only if
    ``force``)."""
    write_json_lines(path, (label_record(q) for q in labels.queries), force=force)


def read_labels(path: Path) -> tuple[QueryLabel, ...]:
    """Read labels written by ``write_labels``; a bad line raises ``InputError`` naming it."""
    out: list[QueryLabel] = []
    for number, record in read_json_lines(path):
        for name in _FIELDS:
            if name not in record:
                raise InputError("missing", file=path, line=number, field=name)
        if record["polarity"] not in ("present", "absent"):
            raise InputError(
                "must be present or absent", file=path, line=number, field="polarity"
            )
        if not isinstance(record["sentences"], list) or not record["sentences"]:
            raise InputError(
                "must be a non-empty list", file=path, line=number, field="sentences"
            )
        key = QueryKey(
            str(record["polarity"]),
            str(record["concept"]),
            str(record["name"]),
            tuple(str(m) for m in record["modifiers"]),
        )
        out.append(QueryLabel(key, tuple(str(s) for s in record["sentences"])))
    return tuple(out)
