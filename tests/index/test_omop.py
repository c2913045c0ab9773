"""The OMOP NOTE_NLP export: the CDM v5.4 columns and types, the mapping, no silent overwrite."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from clinsearch.errors import ClinsearchError
from clinsearch.index import IndexStore
from clinsearch.index.omop import write_note_nlp

# OMOP CDM v5.4 NOTE_NLP: column, CDM datatype, required (from the CDM's table specification).
CDM_NOTE_NLP = [
    ("note_nlp_id", "integer", True), ("note_id", "integer", True),
    ("section_concept_id", "integer", False), ("snippet", "varchar(250)", False),
    ("offset", "varchar(50)", False), ("lexical_variant", "varchar(250)", True),
    ("note_nlp_concept_id", "integer", False), ("note_nlp_source_concept_id", "integer", False),
    ("nlp_system", "varchar(250)", False), ("nlp_date", "date", True),
    ("nlp_datetime", "datetime", False), ("term_exists", "varchar(1)", False),
    ("term_temporal", "varchar(50)", False), ("term_modifiers", "varchar(2000)", False),
]


def _arrow_fits(cdm_type: str, arrow_type: pa.DataType) -> bool:
    if cdm_type == "integer":
        return pa.types.is_integer(arrow_type)
    if cdm_type == "date":
        return pa.types.is_date(arrow_type)
    if cdm_type == "datetime":
        return pa.types.is_timestamp(arrow_type)
    return pa.types.is_string(arrow_type)


def test_columns_types_and_lengths_follow_the_cdm(built: IndexStore, tmp_path: Path) -> None:
    out = tmp_path / "note_nlp.parquet"
    rows = write_note_nlp(built.path, out)
    table = pq.read_table(out)
    findings = built.component("findings").table()
    assert rows == table.num_rows == findings.num_rows
    assert table.column_names == [name for name, _, _ in CDM_NOTE_NLP]
    for name, cdm_type, required in CDM_NOTE_NLP:
        column = table.column(name)
        assert _arrow_fits(cdm_type, column.type), name
        if required:
            assert column.null_count == 0, name
        if cdm_type.startswith("varchar"):
            limit = int(cdm_type[8:-1])
            assert max(len(v) for v in column.to_pylist() if v is not None) <= limit, name
    assert len(set(table.column("note_nlp_id").to_pylist())) == rows


def test_mapping_of_one_negated_finding(built: IndexStore, tmp_path: Path) -> None:
    out = tmp_path / "note_nlp.parquet"
    write_note_nlp(built.path, out)
    rows = pq.read_table(out).to_pylist()
    findings = built.component("findings").table().to_pylist()
    keys = {r["key"]: r["id"] for r in built.generation.table("reports")
            .to_pylist()}
    for row, finding in zip(rows, findings, strict=True):
        assert keys[row["note_id"]] == finding["report_id"]  # ids are not integers: the key
        assert row["lexical_variant"] == finding["text"]
        assert row["offset"] == str(finding["start"])
        assert finding["text"] in row["snippet"]
        assert row["term_exists"] == ("Y" if finding["polarity"] == "present" else "N")
        assert row["term_modifiers"].startswith(f"concept={finding['concept']};polarity=")
        assert (row["note_nlp_concept_id"], row["section_concept_id"]) == (0, 0)
    assert any(r["term_exists"] == "N" for r in rows) and any(r["term_exists"] == "Y" for r in rows)


def test_never_overwrites_without_force_and_writes_csv(built: IndexStore, tmp_path: Path) -> None:
    out = tmp_path / "note_nlp.csv"
    out.write_text("keep me\n", encoding="utf-8")
    with pytest.raises(ClinsearchError, match="use `force`"):
        write_note_nlp(built.path, out, "csv")
    assert out.read_text(encoding="utf-8") == "keep me\n"
    rows = write_note_nlp(built.path, out, "csv", force=True)
    table = pacsv.read_csv(out)
    assert table.num_rows == rows and table.column_names[0] == "note_nlp_id"
    assert out.stat().st_mode & 0o077 == 0


def test_lexicon_codes_and_a_concept_map_fill_the_concept_ids(tmp_path: Path) -> None:
    from clinsearch.annotate.lexicon import Lexicon, dump_lexicon
    from clinsearch.corpus.model import Report
    from clinsearch.index import IndexConfig

    shipped = Lexicon.load()
    codes = (("SNOMEDCT_US", "233604007"), ("UMLS", "C0032285"))
    coded = {cid: replace(c, codes=codes) if cid == "pneumonia" else c
             for cid, c in shipped.concepts.items()}
    lexicon = tmp_path / "coded.yaml"
    lexicon.write_text(dump_lexicon(shipped.with_concepts(coded)), encoding="utf-8")
    config = IndexConfig(options={"findings": {"lexicon": str(lexicon)}})
    index = IndexStore.build([Report("1", "Right lower lobe pneumonia. No pneumothorax.")],
                             tmp_path / "idx", config, progress=False)
    concept_map = tmp_path / "map.csv"
    concept_map.write_text("source_code,concept_id,source_concept_id\n"
                           "SNOMEDCT_US:233604007,255848,4001\n", encoding="utf-8")
    out = tmp_path / "note_nlp.csv"
    write_note_nlp(index.path, out, "csv", concept_map=concept_map)
    rows = {r["lexical_variant"]: r for r in pacsv.read_csv(out).to_pylist()}
    pneumonia = rows["pneumonia"]
    assert (pneumonia["note_nlp_concept_id"], pneumonia["note_nlp_source_concept_id"]) == (
        255848, 4001)
    assert pneumonia["term_modifiers"].startswith(
        "concept=pneumonia;code=SNOMEDCT_US:233604007;code=UMLS:C0032285;polarity=present")
    assert rows["pneumothorax"]["note_nlp_concept_id"] == 0  # no code, not mapped
    concept_map.write_text("source_code,concept_id\nSNOMEDCT_US:233604007,x\n")
    with pytest.raises(ClinsearchError, match=r"map\.csv:2: field 'concept_id': 'x' is not"):
        write_note_nlp(index.path, tmp_path / "again.csv", "csv", concept_map=concept_map)
