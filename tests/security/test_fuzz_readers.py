"""Fuzz of every reader: random bytes, truncated files and mixed encodings give the project's
InputError (or read cleanly), never another exception. Seeded and bounded (a few seconds)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pytest

from clinsearch.annotate.jsonl_annotation import read_requests
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.corpus.readers import read_reports
from clinsearch.errors import ClinsearchError
from clinsearch.query_file import read_queries
from clinsearch.trec import read_qrels, read_run

SEED = 14
CASES = 60  # per reader
VALID = {
    "csv": b'id,text,patient,date\nr1,"No pneumothorax, no effusion.",p1,2020-01-02\n'
           b'r2,Right lower lobe pneumonia.,p2,2021-02-03\n',
    "iu-xray": b"uid,MeSH,Problems,image,indication,comparison,findings,impression\n"
               b"1,normal,normal,Xray Chest,dyspnea,none,The lungs are clear.,No acute disease.\n",
    "mimic-notes": b"ROW_ID,SUBJECT_ID,HADM_ID,CHARTDATE,CATEGORY,TEXT\n"
                   b'1,10,100,2150-03-04,Radiology,"Small left effusion."\n',
    "jsonl": b'{"id": "r1", "text": "No effusion.", "date": "2020-01-02"}\n'
             b'{"id": "r2", "text": "Pneumonia \\u00e9.", "patient_id": "p"}\n',
    "queries": b"qid\tquery\nq1\tpneumonia\nq2\tno effusion\n",
    "run": b"q1 Q0 r1 1 2.5 tag\nq1 Q0 r2 2 1.5 tag\n",
    "qrels": b"q1 0 r1 1\nq1 0 r2 0\n",
    "annotate": b'{"id": "1", "text": "No effusion.", "targets": ["effusion"]}\n',
    "lexicon": b"format: clinsearch-lexicon/1\nname: x\nconcepts:\n  - id: a\n    name: a\n"
               b"    type: finding\n    terms: [a, b]\n",
}


def _mutations(valid: bytes, rng: random.Random) -> list[bytes]:
    """Hostile variants of ``valid``: random bytes, truncations, flips, mixed encodings."""
    text = valid.decode("utf-8")
    out = [
        b"",
        b"\x00" * 64,
        valid[: len(valid) // 2],
        valid[:-3],
        "\ufeff".encode() + valid,
        text.encode("utf-16"),
        text.replace("e", "\xe9").encode("latin-1"),
        valid.replace(b"\n", b"\r"),
        valid + b"\xff\xfe\x80garbage\n",
        valid * 3,
        valid.replace(b",", b'"'),
        valid.replace(b"\n", b"\n\x00"),
    ]
    while len(out) < CASES:
        choice = rng.randrange(4)
        if choice == 0:
            out.append(rng.randbytes(rng.randrange(1, 400)))
        elif choice == 1:
            data = bytearray(valid)
            for _ in range(rng.randrange(1, 6)):
                data[rng.randrange(len(data))] = rng.randrange(256)
            out.append(bytes(data))
        elif choice == 2:
            cut = rng.randrange(1, len(valid))
            out.append(valid[:cut] + rng.randbytes(rng.randrange(0, 30)) + valid[cut:])
        else:
            out.append(valid[: rng.randrange(1, len(valid))])
    return out


def _corpus_reader(fmt: str, **mapping: str) -> Callable[[Path], object]:
    return lambda path: list(read_reports(path, fmt, **mapping))


READERS: dict[str, Callable[[Path], object]] = {
    "csv": _corpus_reader("csv", patient_column="patient", date_column="date"),
    "iu-xray": _corpus_reader("iu-xray"),
    "mimic-notes": _corpus_reader("mimic-notes"),
    "jsonl": _corpus_reader("jsonl"),
    "queries": read_queries,
    "run": read_run,
    "qrels": read_qrels,
    "annotate": lambda path: list(read_requests(path)),
    "lexicon": Lexicon.load,
}


@pytest.mark.parametrize("name", sorted(READERS))
def test_reader_survives_hostile_bytes(name: str, tmp_path: Path) -> None:
    rng = random.Random(f"{SEED}-{name}")
    path = tmp_path / "input"
    read = READERS[name]
    read(_write(path, VALID[name]))  # the valid file reads
    for number, data in enumerate(_mutations(VALID[name], rng)):
        try:
            read(_write(path, data))
        except ClinsearchError:
            pass
        except Exception as exc:
            pytest.fail(f"{name} case {number} ({data[:60]!r}): {type(exc).__name__}: {exc}")


def test_txt_dir_survives_hostile_files(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    folder = tmp_path / "notes"
    folder.mkdir()
    for i, data in enumerate(_mutations(b"No pneumothorax.\nHeart normal.\n", rng)):
        (folder / f"{i:03d}.txt").write_bytes(data)
    reports = list(read_reports(folder, "txt-dir", skip_bad=True))
    assert reports
    with pytest.raises(ClinsearchError):
        list(read_reports(folder, "txt-dir"))


def test_annotation_of_hostile_text_is_total() -> None:
    """Whatever a reader lets through, the annotator handles (control characters, NULs,
    lone surrogates' replacements, very long tokens)."""
    from clinsearch.annotate.annotator import annotator_for

    rng = random.Random(SEED)
    texts = ["\x00\x1b[2J pneumonia", "\ufffd" * 50, "x" * 3000, "No. " * 800,
             json.dumps({"a": [1, 2]}), "\u202eenomuenp"]
    texts += ["".join(chr(rng.randrange(32, 0x3000)) for _ in range(200)) for _ in range(10)]
    for text, findings in zip(texts, annotator_for(None).annotate_many(texts), strict=True):
        assert all(text[f.start : f.end] == f.text for f in findings)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path
