"""Read and write weak labels as JSON lines: one query per line, its variants and matched ids."""

from __future__ import annotations

import json
from pathlib import Path

from clinsearch.errors import InputError
from clinsearch.evaluate.files import atomic_write_lines
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


def write_labels(path: Path, labels: LabelSet) -> None:
    """Write one JSON line per query, atomically."""
    atomic_write_lines(Path(path), (json.dumps(label_record(q)) for q in labels.queries))


def read_labels(path: Path) -> tuple[QueryLabel, ...]:
    """Read labels written by ``write_labels``; a bad line raises ``InputError`` naming it."""
    path = Path(path)
    if not path.is_file():
        raise InputError("labels file not found", file=path)
    out: list[QueryLabel] = []
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"not valid JSON ({exc.msg})", file=path, line=number) from None
            if not isinstance(record, dict):
                raise InputError("expected a JSON object", file=path, line=number)
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
