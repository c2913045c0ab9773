"""Findings as OMOP CDM v5.4 ``NOTE_NLP`` rows (the mapping: docs/reference/omop.md).

One pure function, ``note_nlp_rows``, maps a batch of findings (joined with their sentences) to
NOTE_NLP rows, so the local export (DuckDB) and the Spark export (``mapInArrow``) write the same
rows. ``write_note_nlp`` exports an index's live generation to Parquet or CSV, atomically and
never over an existing file unless asked to.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from clinsearch.errors import ClinsearchError
from clinsearch.version import __version__

if TYPE_CHECKING:
    from clinsearch.duck import ParquetRows

NOTE_NLP_SCHEMA = pa.schema(
    [
        ("note_nlp_id", pa.int64()),
        ("note_id", pa.int64()),
        ("section_concept_id", pa.int32()),
        ("snippet", pa.string()),
        ("offset", pa.string()),
        ("lexical_variant", pa.string()),
        ("note_nlp_concept_id", pa.int32()),
        ("note_nlp_source_concept_id", pa.int32()),
        ("nlp_system", pa.string()),
        ("nlp_date", pa.date32()),
        ("nlp_datetime", pa.timestamp("us", tz="UTC")),
        ("term_exists", pa.string()),
        ("term_temporal", pa.string()),
        ("term_modifiers", pa.string()),
    ]
)
REQUIRED = ("note_nlp_id", "note_id", "lexical_variant", "nlp_date")  # NOT NULL in the CDM
FORMATS = ("parquet", "csv")
SNIPPET_CHARS = 250  # varchar(250)
MODIFIERS_CHARS = 2000  # varchar(2000)
# Context flags that make term_exists N. An indication (the reason for the exam) keeps Y: the
# referrer states the condition of this patient; term_modifiers carries context=indication.
NOT_EXISTING = frozenset({"hypothetical", "family"})
# The findings columns (plus the sentence's text and start) the mapping reads.
INPUT_COLUMNS = ("report_key", "report_id", "start", "end", "text", "concept", "polarity",
                 "context", "modifiers", "sentence_text", "sentence_start")


@dataclass(frozen=True, slots=True)
class ConceptCodes:
    """Each lexicon concept's codes in licensed vocabularies (``Concept.codes``) and, from the
    user's concept map, its OMOP (concept_id, source_concept_id)."""

    codes: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    omop: Mapping[str, tuple[int, int]] = field(default_factory=dict)

    @classmethod
    def of(cls, index: Any, concept_map: str | Path | None = None) -> ConceptCodes:
        """The codes of the lexicon ``index`` was annotated with, mapped by ``concept_map`` (a
        CSV ``source_code,concept_id[,source_concept_id]``, source_code ``SYSTEM:CODE``)."""
        from clinsearch.annotate.lexicon import Lexicon

        options: Any = index.config.options.get("findings", {})
        lexicon = Lexicon.load(options.get("lexicon") or None)
        codes = {c.id: c.codes for c in lexicon.concepts.values() if c.codes}
        if concept_map is None:
            return cls(codes)
        mapped = read_concept_map(concept_map)
        omop = {}
        for cid, pairs in codes.items():
            hit = next((mapped[f"{s}:{c}"] for s, c in pairs if f"{s}:{c}" in mapped), None)
            if hit is not None:
                omop[cid] = hit
        return cls(codes, omop)


def read_concept_map(path: str | Path) -> dict[str, tuple[int, int]]:
    """``SYSTEM:CODE`` -> (OMOP concept_id, source_concept_id or 0) from a headed CSV file;
    a bad row is an InputError naming file, line and field."""
    from clinsearch.corpus.readers.textio import read_csv_rows
    from clinsearch.errors import InputError

    path = Path(path)
    out: dict[str, tuple[int, int]] = {}
    for row in read_csv_rows(path, ("source_code", "concept_id")):
        if isinstance(row, InputError):
            raise row
        code = row.values["source_code"].strip()
        if ":" not in code:
            raise InputError(f"'{code[:40]}' is not SYSTEM:CODE", file=path, line=row.line,
                             field="source_code")
        ids = []
        for name in ("concept_id", "source_concept_id"):
            value = (row.values.get(name) or "0").strip()
            if not value.isdigit() or int(value) > 2**31 - 1:
                raise InputError(f"'{value[:40]}' is not an OMOP concept id", file=path,
                                 line=row.line, field=name)
            ids.append(int(value))
        if code in out:
            raise InputError(f"'{code[:40]}' mapped twice", file=path, line=row.line,
                             field="source_code")
        out[code] = (ids[0], ids[1])
    return out


@dataclass(frozen=True, slots=True)
class NlpRun:
    """What the rows say about the run: system name, time, how note ids are chosen, and the
    concepts' codes."""

    system: str
    when: datetime
    note_id_from: str  # "report_id" when every report id is an integer, else "report_key"
    codes: ConceptCodes = ConceptCodes()

    @classmethod
    def of(cls, manifest: Any, ids_are_integers: bool) -> NlpRun:
        """From an index manifest: the generation's lexicon and creation time."""
        findings = manifest.components.get("findings", {})
        system = (f"clinsearch {__version__}; lexicon {findings.get('lexicon', '?')}"
                  f" {findings.get('lexicon_version', '?')}")
        when = datetime.fromisoformat(manifest.created)
        return cls(system, when, "report_id" if ids_are_integers else "report_key")


def note_nlp_rows(batch: pa.RecordBatch | pa.Table, first_id: int | None, run: NlpRun,
                  ordinals: str | None = None) -> pa.Table:
    """NOTE_NLP rows of findings rows; ``note_nlp_id`` is ``first_id`` + position in the batch,
    or 1 + the ``ordinals`` column (each row's position in the whole findings table)."""
    rows = batch.to_pylist()
    ids = ([first_id + i for i in range(len(rows))] if ordinals is None
           else [int(r[ordinals]) + 1 for r in rows])
    out = {name: [] for name in NOTE_NLP_SCHEMA.names}
    for note_nlp_id, row in zip(ids, rows, strict=True):
        out["note_nlp_id"].append(note_nlp_id)
        out["note_id"].append(int(row[run.note_id_from]))
        out["section_concept_id"].append(0)
        out["snippet"].append(_snippet(row))
        out["offset"].append(str(row["start"]))
        out["lexical_variant"].append(row["text"])
        concept_id, source_concept_id = run.codes.omop.get(row["concept"], (0, 0))
        out["note_nlp_concept_id"].append(concept_id)
        out["note_nlp_source_concept_id"].append(source_concept_id)
        out["nlp_system"].append(run.system)
        out["nlp_date"].append(run.when.date())
        out["nlp_datetime"].append(run.when)
        context = set(row["context"] or ())
        exists = row["polarity"] == "present" and not context & NOT_EXISTING
        out["term_exists"].append("Y" if exists else "N")
        out["term_temporal"].append("past" if "historical" in context else "present")
        out["term_modifiers"].append(_modifiers(row, run.codes.codes)[:MODIFIERS_CHARS])
    return pa.Table.from_pydict(out, schema=NOTE_NLP_SCHEMA)


def _snippet(row: dict[str, Any]) -> str:
    """The sentence, or the 250 characters of it centred on the mention when it is longer."""
    text: str = row["sentence_text"]
    if len(text) <= SNIPPET_CHARS:
        return text
    middle = (row["start"] + row["end"]) // 2 - row["sentence_start"]
    begin = min(max(0, middle - SNIPPET_CHARS // 2), len(text) - SNIPPET_CHARS)
    return text[begin : begin + SNIPPET_CHARS]


def _modifiers(row: dict[str, Any], codes: Mapping[str, tuple[tuple[str, str], ...]]) -> str:
    """``concept=ID[;code=SYSTEM:CODE...];polarity=P[;context=C...][;CATEGORY=VALUE...]``: the
    lexicon concept (the source value) with its licensed codes, and everything the annotator
    found."""
    parts = [f"concept={row['concept']}"]
    parts += [f"code={system}:{code}" for system, code in codes.get(row["concept"], ())]
    parts.append(f"polarity={row['polarity']}")
    parts += [f"context={flag}" for flag in row["context"] or ()]
    parts += [f"{m['category']}={m['value']}" for m in row["modifiers"] or ()]
    return ";".join(parts)


def check_output(path: Path, fmt: str, force: bool) -> None:
    """Refuse an unknown format, and an output the export rules forbid (an existing file
    without ``force``, a place inside an index)."""
    from clinsearch.exports import check_export_path

    if fmt not in FORMATS:
        raise ClinsearchError(f"unknown output format {fmt!r}; choose one of {', '.join(FORMATS)}")
    check_export_path(path, force)


def findings_rows(index: Any) -> ParquetRows:
    """The findings table of an open index's generation (an index without one is an error)."""
    if "findings" not in index.config.components:
        raise ClinsearchError(f"{index.path}: this index has no findings table")
    return index.generation.rows("findings")


def write_note_nlp(index_path: str | Path, out: str | Path, fmt: str = "parquet",
                   force: bool = False, concept_map: str | Path | None = None) -> int:
    """Export the findings of an index's live generation as NOTE_NLP rows to ``out`` (Parquet
    or CSV), concept ids from ``concept_map`` (see ``ConceptCodes.of``); returns the number
    of rows."""
    import pyarrow.compute as pc
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from clinsearch.duck import connect
    from clinsearch.exports import export_path
    from clinsearch.index.index_store import IndexStore

    out = Path(out)
    check_output(out, fmt, force)
    with IndexStore.open(index_path) as index:  # the lease keeps the generation until done
        gen = index.generation
        ids = gen.table("reports", ["id"]).column("id")
        integers = pc.all(pc.match_substring_regex(ids, r"^[0-9]{1,18}$")).as_py()
        run = replace(NlpRun.of(index.manifest, bool(integers)),
                      codes=ConceptCodes.of(index, concept_map))
        findings = index.component("findings").table()  # no findings component: an error
        findings = findings.append_column("_row", pa.array(range(findings.num_rows), pa.int64()))
        rows = 0
        with (connect({"f": findings, "s": gen.rows("sentences")}) as con,
              export_path(out, force=force) as tmp):
            reader = con.sql("SELECT f.*, s.text AS sentence_text, s.start AS sentence_start"
                             " FROM f JOIN s ON s.id = f.sentence_id ORDER BY f._row"
                             ).to_arrow_reader(8192)
            writer = (pq.ParquetWriter(tmp, NOTE_NLP_SCHEMA) if fmt == "parquet"
                      else pacsv.CSVWriter(tmp, NOTE_NLP_SCHEMA))
            try:  # tmp is a private (0600) file until renamed into place
                for batch in reader:
                    table = note_nlp_rows(batch, rows + 1, run)
                    writer.write_table(table)
                    rows += table.num_rows
            finally:
                writer.close()
    return rows
