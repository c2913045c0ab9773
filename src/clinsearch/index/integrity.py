"""Integrity of an index: checksums of every file, and agreement between its parts.

Each generation's manifest records the size and SHA-256 of every file in the folder, segment
files included (and seals itself with a checksum of its own content). ``check_index`` verifies
them, then checks the segments against the manifest and that the parts describe the same live
reports and sentences (deleted ones left out): the reports table, the sentences' reports, the
BM25 documents, the vectors and the findings' sentences (the SQLite ``integrity_check`` idea).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from clinsearch.errors import ClinsearchError
from clinsearch.index.component import (
    SENTENCE_COUNTS_FILE,
    CoreRows,
    Generation,
    sentence_codes,
)
from clinsearch.index.generations import LEASE, lease_current
from clinsearch.index.manifest import MANIFEST_FILE, Manifest
from clinsearch.index.tables import sentence_counts

_UNRECORDED = (MANIFEST_FILE, LEASE)


def file_digests(
    gen_path: Path, previous: tuple[Path, dict[str, dict[str, Any]]] | None = None
) -> dict[str, dict[str, Any]]:
    """Size and SHA-256 of every file of a generation (relative path: record).

    ``previous`` (a generation folder and its recorded digests): a file that is a hard link of
    the same file there (same inode) keeps its recorded digest instead of being read again.
    """
    digests = {}
    for path in sorted(_data_files(gen_path)):
        name = path.relative_to(gen_path).as_posix()
        stat = path.stat()
        if previous is not None and name in previous[1] and _same_inode(stat, previous[0] / name):
            digests[name] = previous[1][name]
            continue
        digests[name] = {"size": stat.st_size, "sha256": _sha256(path)}
    return digests


def _same_inode(stat: os.stat_result, other: Path) -> bool:
    """Whether ``other`` is the same file (a hard link) as the one ``stat`` describes."""
    try:
        seen = other.stat()
    except FileNotFoundError:
        return False
    return (seen.st_dev, seen.st_ino, seen.st_size) == (stat.st_dev, stat.st_ino, stat.st_size)


def check_index(root: Path) -> tuple[int, list[str]]:
    """Verify the live generation of ``root``: (files checked, problems found, one per line)."""
    try:
        lease = lease_current(root)
    except ClinsearchError as exc:
        return 0, [str(exc)]
    try:
        try:
            manifest = Manifest.read(lease.path)
        except ClinsearchError as exc:
            return 0, [str(exc)]
        gen = Generation(lease.path, manifest.segments)
        problems = _check_files(gen.path, manifest.files)
        if problems:  # damaged files are not parsed: a reader of garbage may even abort
            return len(manifest.files), [*problems, "the parts were not cross-checked: restore"
                                         " the damaged files from a backup or rebuild the index"]
        try:
            core = CoreRows.read(gen)
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as exc:  # broken files fail in many ways, Rust panics too
            return len(manifest.files), [_unreadable("core tables", exc)]
        problems = _guarded("core tables", lambda: _check_core(gen, core, manifest))
        for component in manifest.config.make():
            check = getattr(component, "check", None)
            if check is not None:
                entry = manifest.components.get(component.name, {})
                problems += _guarded(component.name, lambda c=check, e=entry: c(gen, core, e))
        return len(manifest.files), problems
    finally:
        lease.release()


def _check_files(gen_path: Path, recorded: dict[str, dict[str, Any]]) -> list[str]:
    """Missing, changed and unrecorded files of a generation."""
    if not recorded:
        return [f"{gen_path / MANIFEST_FILE}: records no checksums (an older index); rebuild it"]
    problems = []
    for name, record in recorded.items():
        path = gen_path / name
        if not path.is_file():
            problems.append(f"{path}: missing")
        elif path.stat().st_size != record["size"]:
            problems.append(f"{path}: size {path.stat().st_size}, expected {record['size']}")
        elif _sha256(path) != record["sha256"]:
            problems.append(f"{path}: checksum mismatch (the file is damaged)")
    present = {p.relative_to(gen_path).as_posix() for p in _data_files(gen_path)}
    problems += [f"{gen_path / name}: not recorded in the manifest" for name in
                 sorted(present - set(recorded))]
    return problems


def _check_core(gen: Generation, core: CoreRows, manifest: Manifest) -> list[str]:
    """The segments against the manifest, and the live core tables against each other and
    against the manifest's counts."""
    problems = _check_segments(gen)
    reports, sentences = gen.path / "reports", gen.path / "sentences"  # the logical tables
    counts = manifest.counts
    if len(core.report_keys) != counts.reports:
        problems.append(f"{reports}: {len(core.report_keys)} live reports, the manifest says"
                        f" {counts.reports}")
    if len(core.sentence_keys) != counts.sentences:
        problems.append(f"{sentences}: {len(core.sentence_keys)} live sentences, the manifest"
                        f" says {counts.sentences}")
    if len(np.unique(core.report_keys)) != len(core.report_keys):
        problems.append(f"{reports}: report keys repeat")
    orphans = np.setdiff1d(core.sentence_keys, core.report_keys)
    if len(orphans):
        problems.append(f"{sentences}: {len(orphans)} report key(s) of sentences are not"
                        " in the reports table")
    codes = sentence_codes(core.sentence_keys, core.sentence_indexes)
    if len(np.unique(codes)) != len(codes):
        problems.append(f"{sentences}: (report, sentence index) pairs repeat")
    if manifest.next_report_key <= int(core.report_keys.max(initial=-1)):
        problems.append(f"{gen.path / MANIFEST_FILE}: next_report_key is not above every key")
    return problems


def _check_segments(gen: Generation) -> list[str]:
    """Each segment's stored rows and keys against its record; segments in key order."""
    problems = []
    last = -1
    for segment in gen.segments:
        folder = gen.segment_path(segment)
        keys = pq.ParquetFile(folder / "reports.parquet").read(["key"]).column("key").to_numpy()
        sentences = pq.ParquetFile(folder / "sentences.parquet").metadata.num_rows
        if (len(keys), sentences) != (segment.reports, segment.sentences):
            problems.append(f"{folder}: {len(keys)} reports and {sentences} sentences, the"
                            f" manifest says {segment.reports} and {segment.sentences}")
        counted = folder / SENTENCE_COUNTS_FILE
        if counted.is_file():  # segments of older clinsearch versions have none
            sentence_keys = pq.ParquetFile(folder / "sentences.parquet").read(
                ["report_key"]).column(0).to_numpy()
            if not np.array_equal(np.load(counted, allow_pickle=False),
                                  sentence_counts(keys, sentence_keys)):
                problems.append(f"{counted}: sentences per report disagree with the sentences"
                                " table")
        if len(keys) and (keys.min() < segment.first_key or keys.max() > segment.last_key):
            problems.append(f"{folder}: report keys outside the segment's range"
                            f" {segment.first_key}-{segment.last_key}")
        if segment.first_key <= last:
            problems.append(f"{folder}: key range overlaps the previous segment's")
        last = max(last, segment.last_key)
    return problems


def _guarded(part: str, check: Any) -> list[str]:
    """Run one check; a part that cannot even be read is itself a problem."""
    try:
        return list(check())
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # broken files fail in many ways, Rust panics too
        return [_unreadable(part, exc)]


def _unreadable(part: str, exc: BaseException) -> str:
    """The problem line of a part that failed to read."""
    return f"{part}: cannot be read ({type(exc).__name__}: {exc})"


def _data_files(gen_path: Path) -> list[Path]:
    """Every file of a generation except the manifest, the lease and tantivy's empty locks."""
    found = []
    for folder, _, names in os.walk(gen_path):
        for name in names:
            path = Path(folder) / name
            if path.parent == gen_path and name in _UNRECORDED:
                continue
            if name.startswith(".tantivy-") and name.endswith(".lock"):
                continue  # tantivy's lock files: empty, and readers may create them
            found.append(path)
    return found


def _sha256(path: Path) -> str:
    """The SHA-256 of a file, read in chunks."""
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
