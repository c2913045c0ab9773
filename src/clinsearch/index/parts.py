"""Index tables computed in parts elsewhere (e.g. one part per Spark partition), then committed.

A part is a folder of Parquet files holding the rows a local build would write for a run of
reports: ``reports``, ``sentences`` and, when the index has those components, ``findings`` and
``dense`` (vectors). Report keys in a part are the reports' ordinals in the whole input (0, 1,
...); the commit adds the index's next free key. ``Index.build_from_parts`` / ``add_parts``
commit one generation in which each part is one segment, through the same writers as a local
build.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from clinsearch.corpus.model import Report
from clinsearch.index.config import IndexConfig
from clinsearch.index.tables import REPORTS_SCHEMA, SENTENCES_SCHEMA, reports_table, sentences_table

COMPUTED = ("findings", "dense")  # components whose rows a part carries
TABLES = ("reports", "sentences", *COMPUTED)
KEY_COLUMNS = {"reports": "key", "sentences": "report_key", "findings": "report_key",
               "dense": "report_key"}


@dataclass(frozen=True, slots=True)
class PartOptions:
    """What a part computes, from the index configuration (picklable, sent to workers)."""

    findings: bool
    dense: bool
    lexicon: str | None
    model: str | None
    findings_batch: int
    dense_batch: int | None  # None: the encoder device's batch size (models.device)
    section_context: tuple[tuple[str, str], ...] = ()  # the findings' section meanings changed

    @classmethod
    def of(cls, config: IndexConfig) -> PartOptions:
        """The options a build with ``config`` needs in each part."""
        findings = config.options.get("findings", {})
        dense = config.options.get("dense", {})
        lexicon, model = findings.get("lexicon"), dense.get("model")
        return cls(
            findings="findings" in config.components,
            dense="dense" in config.components,
            lexicon=str(lexicon) if lexicon else None,
            model=str(model) if model else None,
            findings_batch=int(findings.get("batch_size", 256)),
            dense_batch=dense.get("batch_size"),
            section_context=tuple(sorted((findings.get("section_context") or {}).items())),
        )


def compute_part(keyed: Sequence[tuple[int, Report]], options: PartOptions) -> dict[str, pa.Table]:
    """Segment, annotate and (with dense) embed reports with their ordinals: the part's tables.

    The segmenter, annotator and encoder are built once per process and reused by later parts.
    """
    from clinsearch.corpus.segment import Segmenter
    from clinsearch.index.findings import SENTENCE_COLUMNS, annotate_sentences

    segmenter = Segmenter()
    segmented = [(key, segmenter.segment(report)) for key, report in keyed]
    sentences = sentences_table(segmented)
    tables = {"reports": reports_table(segmented), "sentences": sentences}
    if options.findings:
        from clinsearch.annotate.annotator import annotator_for
        from clinsearch.annotate.context_rules import conclusion, section_contexts

        tables["findings"] = annotate_sentences(
            sentences.select(SENTENCE_COLUMNS), annotator_for(options.lexicon),
            options.findings_batch, sections=section_contexts(dict(options.section_context)),
            conclusion=conclusion(),
        )
    if options.dense:
        from clinsearch.index.dense import embed_sentences, vectors_table
        from clinsearch.models.encoder import load_encoder

        encoder = load_encoder(options.model)
        table = sentences.select(["report_key", "index", "text"])
        tables["dense"] = vectors_table(*embed_sentences(table, encoder, options.dense_batch))
    return tables


def write_part(folder: Path, tables: dict[str, pa.Table]) -> None:
    """Write a part's tables into ``folder`` (created; written under a temporary name first, so
    that a folder that exists is complete)."""
    tmp = folder.with_name(f".{folder.name}.tmp")
    tmp.mkdir(parents=True, mode=0o700)
    for name, table in tables.items():
        pq.write_table(table, tmp / f"{name}.parquet")
    os.replace(tmp, folder)


@dataclass(frozen=True, slots=True)
class Parts:
    """Part folders in report-key order, and the key the first report gets in the index."""

    folders: tuple[Path, ...]
    first_key: int = 0

    def has(self, name: str) -> bool:
        """Whether the parts carry table ``name``."""
        return bool(self.folders) and (self.folders[0] / f"{name}.parquet").is_file()

    def tables(self, name: str, columns: list[str] | None = None) -> Iterator[pa.Table]:
        """Table ``name`` part by part, with report keys moved to start at ``first_key``."""
        key = KEY_COLUMNS[name]
        for folder in self.folders:
            table = pq.read_table(folder / f"{name}.parquet", columns=columns)
            if key in table.column_names and self.first_key:
                at = table.column_names.index(key)
                shifted = pc.add(table.column(key), pa.scalar(self.first_key, pa.int64()))
                table = table.set_column(at, key, shifted)
            yield table

    def core(self) -> Iterator[tuple[pa.Table, pa.Table]]:
        """(reports, sentences) of each part, in the index's schemas."""
        reports = self.tables("reports")
        sentences = self.tables("sentences")
        for r, s in zip(reports, sentences, strict=True):
            yield r.cast(REPORTS_SCHEMA), s.cast(SENTENCES_SCHEMA)
