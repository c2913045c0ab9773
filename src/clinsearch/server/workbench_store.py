"""Each user's workbench, kept server-side in one private SQLite file: term bundles (own or
shared), uploaded id lists, saved searches and cohorts, and the history of queries.

Only queries, names, counts and ids are stored, never report text. The file and its folder are
created private (``clinsearch.permissions``; SQLite gives its WAL the file's mode), every
statement binds its values as parameters, and one connection serves the threads in turn.
"""

from __future__ import annotations

import csv
import io
import json
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from clinsearch.errors import InputError
from clinsearch.search.cohort.syntax import fold
from clinsearch.server.audit import utc_now
from clinsearch.server.sqlite_store import SqliteStore

WORKBENCH_FILE = "clinsearch-workbench.sqlite"  # default: beside the audit log
HISTORY_KEPT = 200  # entries per user
MAX_TERMS = 200  # terms per bundle
MAX_IDS = 100_000  # ids per uploaded list
MAX_ID_CHARS = 200  # characters of one id (as a report id in a URL)
IdKind = Literal["patient", "report"]
SavedKind = Literal["search", "cohort"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS bundles (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, folded TEXT NOT NULL,
    shared INTEGER NOT NULL, terms TEXT NOT NULL, updated TEXT NOT NULL,
    UNIQUE (owner, folded));
CREATE TABLE IF NOT EXISTS id_lists (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
    ids TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS saved (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL,
    state TEXT NOT NULL, counts TEXT NOT NULL, members TEXT NOT NULL, created TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS history (
    id INTEGER PRIMARY KEY, owner TEXT NOT NULL, kind TEXT NOT NULL, state TEXT NOT NULL,
    counts TEXT NOT NULL, time TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS history_owner ON history (owner, id);
CREATE INDEX IF NOT EXISTS saved_owner ON saved (owner, id);
CREATE INDEX IF NOT EXISTS id_lists_owner ON id_lists (owner, id);
"""


@dataclass(frozen=True)
class Bundle:
    """A named list of words, phrases and lexicon concepts standing for one idea."""

    id: int
    owner: str
    name: str
    shared: bool
    terms: list[str]
    updated: str


@dataclass(frozen=True)
class IdList:
    """An uploaded list of patient or report ids."""

    id: int
    owner: str
    name: str
    kind: IdKind
    ids: list[str]
    created: str


@dataclass(frozen=True)
class Saved:
    """A saved search or cohort: its page state (the URL's parameters), and the counts and
    members (patient ids, for a cohort) it had when saved."""

    id: int
    owner: str
    name: str
    kind: SavedKind
    state: dict[str, str]
    counts: dict[str, int]
    members: list[str]
    created: str


@dataclass(frozen=True)
class HistoryEntry:
    """One query a user ran: its page state and counts."""

    id: int
    kind: str
    state: dict[str, str]
    counts: dict[str, int]
    time: str


class WorkbenchStore(SqliteStore):
    """The workbench database at ``path`` (created private on first use)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, SCHEMA)

    # ---- bundles -----------------------------------------------------------------------------
    def save_bundle(self, owner: str, name: str, terms: list[str], shared: bool) -> Bundle:
        """Create or replace ``owner``'s bundle ``name`` (names compare as ``fold`` does)."""
        name, terms = bundle_name(name), bundle_terms(terms)
        with self._transaction() as db:
            db.execute("INSERT INTO bundles (owner, name, folded, shared, terms, updated)"
                       " VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (owner, folded) DO UPDATE SET"
                       " name = excluded.name, shared = excluded.shared,"
                       " terms = excluded.terms, updated = excluded.updated",
                       (owner, name, fold(name), int(shared), json.dumps(terms), utc_now()))
        found = self.bundle(owner, name)
        assert found is not None
        return found

    def bundles(self, user: str) -> list[Bundle]:
        """The bundles ``user`` may use: its own, then those others share (by name)."""
        rows = self._rows("SELECT id, owner, name, shared, terms, updated FROM bundles"
                          " WHERE owner = ? OR shared = 1 ORDER BY owner != ?, folded, owner",
                          (user, user))
        return [_bundle(row) for row in rows]

    def bundle(self, user: str, name: str) -> Bundle | None:
        """The bundle ``name`` as ``user`` reads it (its own first, else a shared one)."""
        return next((b for b in self.bundles(user) if fold(b.name) == fold(name)), None)

    def bundle_terms_for(self, user: str) -> dict[str, list[str]]:
        """Every bundle ``user`` may use, name -> terms (its own win over shared ones)."""
        out: dict[str, list[str]] = {}
        for b in self.bundles(user):
            out.setdefault(fold(b.name), b.terms)
        return out

    def delete_bundle(self, owner: str, name: str) -> None:
        """Remove ``owner``'s bundle ``name`` (only the owner may)."""
        with self._transaction() as db:
            gone = db.execute("DELETE FROM bundles WHERE owner = ? AND folded = ?",
                              (owner, fold(name))).rowcount
        if not gone:
            raise LookupError(f"you have no bundle named {name!r}")

    # ---- id lists ----------------------------------------------------------------------------
    def add_list(self, owner: str, name: str, kind: IdKind, ids: list[str]) -> IdList:
        """Store an uploaded list."""
        name = check_name(name, "a list")
        with self._transaction() as db:
            row = db.execute("INSERT INTO id_lists (owner, name, kind, ids, created)"
                             " VALUES (?, ?, ?, ?, ?) RETURNING id",
                             (owner, name.strip()[:200], kind, json.dumps(ids), utc_now())
                             ).fetchone()
        found = self.id_list(int(row[0]))
        assert found is not None
        return found

    def lists(self, owner: str) -> list[IdList]:
        """``owner``'s lists, newest first."""
        rows = self._rows("SELECT id, owner, name, kind, ids, created FROM id_lists"
                          " WHERE owner = ? ORDER BY id DESC", (owner,))
        return [_id_list(row) for row in rows]

    def id_list(self, list_id: int) -> IdList | None:
        """The list ``list_id``, whoever owns it (the routes give it to its owner only)."""
        rows = self._rows("SELECT id, owner, name, kind, ids, created FROM id_lists"
                          " WHERE id = ?", (list_id,))
        return _id_list(rows[0]) if rows else None

    def delete_list(self, owner: str, list_id: int) -> None:
        """Remove ``owner``'s list ``list_id``."""
        with self._transaction() as db:
            gone = db.execute("DELETE FROM id_lists WHERE owner = ? AND id = ?",
                              (owner, list_id)).rowcount
        if not gone:
            raise LookupError(f"you have no list {list_id}")

    # ---- saved searches and cohorts ----------------------------------------------------------
    def save(self, owner: str, name: str, kind: SavedKind, state: dict[str, str],
             counts: dict[str, int], members: list[str]) -> Saved:
        """Save a search or cohort under ``name``."""
        name = check_name(name, "a saved search")
        with self._transaction() as db:
            row = db.execute("INSERT INTO saved (owner, name, kind, state, counts, members,"
                             " created) VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",
                             (owner, name.strip()[:200], kind, json.dumps(state),
                              json.dumps(counts), json.dumps(members), utc_now())).fetchone()
        found = self.saved_item(owner, int(row[0]))
        assert found is not None
        return found

    def saved(self, owner: str) -> list[Saved]:
        """``owner``'s saved searches and cohorts, newest first."""
        rows = self._rows("SELECT id, owner, name, kind, state, counts, members, created"
                          " FROM saved WHERE owner = ? ORDER BY id DESC", (owner,))
        return [_saved(row) for row in rows]

    def saved_item(self, owner: str, saved_id: int) -> Saved | None:
        """``owner``'s saved item ``saved_id``."""
        rows = self._rows("SELECT id, owner, name, kind, state, counts, members, created"
                          " FROM saved WHERE owner = ? AND id = ?", (owner, saved_id))
        return _saved(rows[0]) if rows else None

    def delete_saved(self, owner: str, saved_id: int) -> None:
        """Remove ``owner``'s saved item ``saved_id``."""
        with self._transaction() as db:
            gone = db.execute("DELETE FROM saved WHERE owner = ? AND id = ?",
                              (owner, saved_id)).rowcount
        if not gone:
            raise LookupError(f"you have no saved search {saved_id}")

    # ---- history -----------------------------------------------------------------------------
    def remember(self, owner: str, kind: str, state: dict[str, str], counts: dict[str, int]
                 ) -> None:
        """Append a query to ``owner``'s history (the last HISTORY_KEPT are kept)."""
        with self._transaction() as db:
            db.execute("INSERT INTO history (owner, kind, state, counts, time)"
                       " VALUES (?, ?, ?, ?, ?)",
                       (owner, kind, json.dumps(state), json.dumps(counts), utc_now()))
            db.execute("DELETE FROM history WHERE owner = ? AND id NOT IN (SELECT id FROM"
                       " history WHERE owner = ? ORDER BY id DESC LIMIT ?)",
                       (owner, owner, HISTORY_KEPT))

    def history(self, owner: str, limit: int = 50) -> list[HistoryEntry]:
        """``owner``'s latest queries, newest first."""
        rows = self._rows("SELECT id, kind, state, counts, time FROM history WHERE owner = ?"
                          " ORDER BY id DESC LIMIT ?", (owner, limit))
        return [HistoryEntry(int(r[0]), r[1], json.loads(r[2]), json.loads(r[3]), r[4])
                for r in rows]


def bundle_name(name: object) -> str:
    """A bundle name as given, checked: a non-empty string of at most 100 characters."""
    if not isinstance(name, str) or not name.strip() or not fold(name):
        raise InputError("field 'name': a bundle needs a name with a letter or digit")
    if len(name) > 100:
        raise InputError("field 'name': at most 100 characters")
    return check_name(name, "a bundle")


def check_name(name: str, what: str) -> str:
    """A name users see, stripped: refused when empty or holding control or format characters
    (NUL, line breaks, bidirectional overrides such as U+202E that make it read otherwise)."""
    name = name.strip()
    if not name:
        raise InputError(f"field 'name': {what} needs a name")
    hidden = next((c for c in name if unicodedata.category(c) in ("Cc", "Cf", "Cs")), None)
    if hidden is not None:
        raise InputError(f"field 'name': {what}'s name holds the control or format character"
                         f" U+{ord(hidden):04X}; use visible characters")
    return name


def bundle_terms(terms: object) -> list[str]:
    """Bundle terms as given, checked: strings, stripped, distinct, at least one."""
    if not isinstance(terms, list) or not all(isinstance(t, str) for t in terms):
        raise InputError("field 'terms': a list of words or phrases")
    kept = list(dict.fromkeys(t.strip() for t in terms if t.strip()))
    if not kept:
        raise InputError("field 'terms': a bundle needs at least one term")
    if len(kept) > MAX_TERMS:
        raise InputError(f"field 'terms': at most {MAX_TERMS} terms (got {len(kept)})")
    if any('"' in t for t in kept):
        raise InputError("field 'terms': a term may not hold a double quote")
    return kept


def _bundle(row: tuple[Any, ...]) -> Bundle:
    return Bundle(int(row[0]), row[1], row[2], bool(row[3]), json.loads(row[4]), row[5])


def _id_list(row: tuple[Any, ...]) -> IdList:
    return IdList(int(row[0]), row[1], row[2], row[3], json.loads(row[4]), row[5])


def _saved(row: tuple[Any, ...]) -> Saved:
    return Saved(int(row[0]), row[1], row[2], row[3], json.loads(row[4]), json.loads(row[5]),
                 json.loads(row[6]), row[7])


def read_id_csv(text: str, source: str = "upload") -> list[str]:
    """The ids of a CSV upload: the first column, leading ``#`` lines (a cohort export's) and a
    header row (``id``, ``patient_id``, ``report_id``, ...) skipped, blanks and repeats
    dropped; an empty list is an error, and so is an id holding a line break or a quote (a
    quote left open that swallowed the lines after it) or longer than MAX_ID_CHARS."""
    ids: list[str] = []
    rows = csv.reader(io.StringIO(text))
    line_no, leading = 1, True
    while True:
        try:
            row = next(rows)
        except StopIteration:
            break
        except csv.Error as exc:
            raise InputError(f"{source}, line {line_no}: malformed CSV ({exc})") from None
        cell = row[0].strip() if row else ""
        if leading and cell.startswith("#"):  # the comment lines a cohort export starts with
            line_no = rows.line_num + 1
            continue
        if leading and fold(cell) in HEADER_NAMES:
            leading = False
            line_no = rows.line_num + 1
            continue
        leading = False
        if any(c in cell for c in '\r\n"'):
            raise InputError(f"{source}, line {line_no}: an id holds a line break or a quote"
                             " (a quote left open?)")
        if len(cell) > MAX_ID_CHARS:
            raise InputError(f"{source}, line {line_no}: an id longer than {MAX_ID_CHARS}"
                             " characters")
        if cell:
            ids.append(cell)
        if len(ids) > MAX_IDS:
            raise InputError(f"{source}, line {line_no}: more than {MAX_IDS:,} ids")
        line_no = rows.line_num + 1
    ids = list(dict.fromkeys(ids))
    if not ids:
        raise InputError(f"{source}, line 1: no ids in the first column")
    return ids


HEADER_NAMES = {"id", "ids", "patient", "patientid", "patients", "report", "reportid", "reports",
                "uid", "mrn"}

