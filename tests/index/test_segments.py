"""Segments: adds, deletion marks, merges and erasure give the answers of a fresh build."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from clinsearch import Index, IndexConfig
from clinsearch.cli import app
from clinsearch.corpus.model import Report
from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path
from clinsearch.index import integrity
from clinsearch.index.component import Generation
from clinsearch.index.integrity import check_index
from clinsearch.search.cohort import Cohort

from .conftest import segmented

TOKEN = "zqxvorthumbrelline"
BM25_QUERIES = ("pleural effusion", "no pneumothorax", "cardiomegaly")
CONCEPT_QUERIES = ("pleural effusion", "pneumonia", "no pneumothorax")
COHORTS = ('"pleural effusion" AND NOT pneumothorax', "cardiomegaly OR edema")


@pytest.fixture(scope="module")
def sample() -> list[Report]:
    """The first 45 reports of the bundled sample, and one holding a unique token."""
    reports = list(read_reports(sample_reports_path(), SAMPLE_FORMAT))[:45]
    secret = replace(reports[0], id="secret", text=f"Findings: {TOKEN} opacity. No effusion.")
    return [*reports[:20], secret, *reports[20:]]


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory, sample: list[Report]) -> Index:
    """A fresh build of the whole sample."""
    return Index.build(sample, tmp_path_factory.mktemp("fresh") / "idx", progress=False)


def answers(index: Index, with_keys: bool = True) -> dict[str, Any]:
    """What users see: stored ids and texts, findings, concept and BM25 top 10 with scores,
    cohort counts and members."""
    lookup = index.lookup
    findings = index.component("findings").table()
    if not with_keys:
        findings = findings.drop(["report_key"])
    cohort = Cohort(index)
    out: dict[str, Any] = {
        "reports": list(lookup.report_ids),
        "sentences": list(zip(lookup.sentence_ids, lookup.sentence_texts, strict=True)),
        "findings": findings.to_pylist(),
        "cohorts": [(cohort.counts(q), cohort.members(q, "report")) for q in COHORTS],
    }
    for level in ("sentence", "report"):
        for method, queries in (("bm25", BM25_QUERIES), ("concept", CONCEPT_QUERIES)):
            for query in queries:
                hits = index.search(query, level=level, method=method, top=10)
                out[f"{method}:{level}:{query}"] = [(h.id, round(h.score, 5)) for h in hits]
    return out


def test_adds_answer_as_a_fresh_build(
    tmp_path: Path, sample: list[Report], fresh: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = Index.build(sample[:15], tmp_path / "idx", progress=False)
    index.add(sample[15:30], progress=False)
    hashed: list[Path] = []
    digest = integrity._sha256
    monkeypatch.setattr(integrity, "_sha256", lambda path: hashed.append(path) or digest(path))
    index.add(sample[30:], progress=False)  # linked files keep their recorded checksums
    assert {p.parent.name for p in hashed if p.name == "reports.parquet"} == {"s000003"}
    assert [s.reports for s in index.generation.segments] == [15, 15, len(sample) - 30]
    assert index.manifest.counts == fresh.manifest.counts
    assert answers(index) == answers(fresh)
    assert check_index(index.path)[1] == []


def test_delete_marks_hide_reports_and_optimize_gives_a_fresh_build(
    tmp_path: Path, sample: list[Report]
) -> None:
    index = Index.build(sample[:25], tmp_path / "idx", progress=False)
    index.add(sample[25:], progress=False)
    gone = {sample[3].id, sample[30].id, "secret"}
    before = _segment_files(index)
    index.delete(sorted(gone))
    assert _segment_files(index) == before  # a delete writes only its marks there
    assert (index.generation.path / "deleted.parquet").is_file()
    seen = answers(index)
    assert not gone & set(seen["reports"])
    assert not gone & {row["report_id"] for row in seen["findings"]}
    for key, hits in seen.items():
        if ":" in key:
            assert not any(h.split("#")[0] in gone for h, _ in hits), key
    for counts_members in seen["cohorts"]:
        assert not gone & {m.id for m in counts_members[1]}
    assert index.manifest.counts.reports == len(sample) - 3
    assert check_index(index.path)[1] == []

    assert index.optimize() == 2
    assert len(index.generation.segments) == 1 and not len(index.generation.deleted_keys())
    kept = [r for r in sample if r.id not in gone]
    rebuilt = Index.build(kept, tmp_path / "rebuilt", progress=False)
    assert answers(index, with_keys=False) == answers(rebuilt, with_keys=False)
    assert check_index(index.path)[1] == []
    assert index.optimize() == 0


def _segment_files(index: Index) -> dict[str, int]:
    """The inode of each segment file of an index's generation, by relative path."""
    folder = index.generation.path / "segments"
    return {str(p.relative_to(folder)): p.stat().st_ino for p in folder.rglob("*")
            if p.is_file()}


def test_merge_policy_keeps_few_segments(tmp_path: Path) -> None:
    config = IndexConfig(merge_factor=3)
    index = Index.build([segmented("r0", ["Pleural effusion."])], tmp_path / "idx", config,
                        progress=False)
    for i in range(1, 12):
        index.add([segmented(f"r{i}", [f"Pneumothorax number {i}."])], progress=False)
        if i == 5:
            index.delete(["r2"])
    sizes = [s.reports for s in index.generation.segments]
    assert len(sizes) <= 4 and sum(sizes) == 11  # r2's row went with a merge, its mark stays
    assert index.generation.deleted_keys().tolist() == [2]
    assert [h.id for h in index.search("pneumothorax", method="bm25", top=20)] != []
    assert sorted(index.lookup.report_ids) == sorted(f"r{i}" for i in range(12) if i != 2)
    assert check_index(index.path)[1] == []
    index.optimize()  # erases r2 everywhere, though a merge already dropped its core rows
    assert index.manifest.components["bm25"]["deleted"] == {"sentences": 0, "reports": 0}
    assert [s.reports for s in index.generation.segments] == [11]
    assert check_index(index.path)[1] == []


def _holding(root: Path, token: str) -> list[str]:
    """Files under ``root`` whose raw bytes, or whose decoded Parquet values, hold ``token``."""
    found = []
    for path in root.rglob("*"):
        if not path.is_file():
            continue
        decoded = str(pq.read_table(path).to_pylist()) if path.suffix == ".parquet" else ""
        if token.encode() in path.read_bytes() or token in decoded:
            found.append(str(path.relative_to(root)))
    return found


@pytest.mark.parametrize("how", ["purge", "optimize"])
def test_erasure_leaves_no_trace_of_a_deleted_report(
    tmp_path: Path, sample: list[Report], how: str
) -> None:
    root = tmp_path / "idx"
    Index.build(sample[:30], root, progress=False).close()
    with Index.open(root) as index:
        index.add(sample[30:], progress=False)
        assert [h.id for h in index.search(TOKEN, method="bm25")] == ["secret"]
    assert _holding(root, TOKEN)  # positive control: the text is in the files
    runner = CliRunner()
    if how == "purge":
        result = runner.invoke(app, ["delete", str(root), "--ids", "secret", "--purge"])
        assert result.exit_code == 0 and "erased" in result.output, result.output
    else:
        result = runner.invoke(app, ["delete", str(root), "--ids", "secret"])
        assert result.exit_code == 0, result.output
        assert _holding(root, TOKEN)  # a delete only marks
        result = runner.invoke(app, ["optimize", str(root)])
        assert result.exit_code == 0 and "merged 2 segment(s)" in result.output, result.output
    assert _holding(root, TOKEN) == []
    assert len(list(root.glob("gen-*"))) == 1  # no reader held an older generation
    with Index.open(root) as index:
        assert index.search(TOKEN, method="bm25") == []
        assert index.manifest.counts.reports == len(sample) - 1
    assert check_index(root)[1] == []


def test_checksums_detect_a_flipped_byte_in_a_segment_file(
    tmp_path: Path, sample: list[Report]
) -> None:
    root = tmp_path / "idx"
    config = IndexConfig(max_segment_reports=20)
    with Index.build(sample[:30], root, config, progress=False) as index:
        assert [s.reports for s in index.generation.segments] == [20, 10]
        target = index.generation.path / "segments" / "s000002" / "findings.parquet"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01
    target.write_bytes(bytes(data))
    files, problems = check_index(root)
    assert files > 0
    assert any("s000002/findings.parquet: checksum mismatch" in p for p in problems), problems


def test_optimize_keeps_segments_within_max_segment_reports(
    tmp_path: Path, sample: list[Report]
) -> None:
    index = Index.build(sample[:25], tmp_path / "idx", IndexConfig(max_segment_reports=20),
                        progress=False)
    index.add(sample[25:35], progress=False)
    index.add(sample[35:], progress=False)
    assert [s.reports for s in index.generation.segments] == [20, 5, 10, 11]
    assert index.optimize() == 2  # 5 + 10 fit in 20 reports; 15 + 11 do not
    assert [s.reports for s in index.generation.segments] == [20, 15, 11]
    assert index.optimize() == 0
    gone = {sample[3].id, sample[30].id, "secret"}  # "secret" is sample[20]
    index.delete(sorted(gone))
    assert index.optimize() == 2  # the segments with deleted rows, each alone (19 + 13 > 20)
    assert [s.reports for s in index.generation.segments] == [19, 13, 11]
    kept = [r for r in sample if r.id not in gone]
    rebuilt = Index.build(kept, tmp_path / "rebuilt", progress=False)
    assert answers(index, with_keys=False) == answers(rebuilt, with_keys=False)
    assert check_index(index.path)[1] == []


def test_a_table_read_reads_only_the_columns_asked(
    fresh: Index, monkeypatch: pytest.MonkeyPatch
) -> None:
    read, asked = pq.ParquetFile.read, []
    monkeypatch.setattr(pq.ParquetFile, "read", lambda self, columns=None, **options: (
        asked.append(columns) or read(self, columns, **options)))
    table = fresh.generation.table("findings", ["report_key"])  # the key column itself
    assert table.column_names == ["report_key"] and table.num_rows
    assert asked == [["report_key"]] * len(fresh.generation.segments)


def test_merged_segments_keep_row_groups_small(
    tmp_path: Path, sample: list[Report], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A merge appends whole segments; their rows still land in row groups of bounded size (a
    reader fetching a few rows' ids or texts reads whole row groups)."""
    from clinsearch.index import tables

    monkeypatch.setattr(tables, "ROW_GROUP_ROWS", 40)
    index = Index.build(sample[:25], tmp_path / "idx", progress=False)
    index.add(sample[25:], progress=False)
    assert index.optimize() == 2
    (segment,) = index.generation.segments
    for name in ("reports", "sentences"):
        meta = pq.ParquetFile(index.generation.segment_path(segment) / f"{name}.parquet").metadata
        sizes = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        assert max(sizes) <= 40 and sum(sizes) == meta.num_rows
    assert meta.num_rows > 40  # the sentences did need several row groups
    assert check_index(index.path)[1] == []


def test_a_few_reports_rows_are_read_from_their_row_groups_alone(
    tmp_path: Path, sample: list[Report], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading some reports' findings (a report view, the triggers of a page of hits) reads
    only the row groups whose key range holds them, and gives the rows a whole read would,
    filters and deletion marks applied."""
    from clinsearch.index import findings

    monkeypatch.setattr(findings, "_ROW_GROUP", 16)
    index = Index.build(sample, tmp_path / "idx", progress=False)
    index.delete([sample[3].id])
    gen = index.generation
    whole = gen.table("findings").to_pylist()
    groups = pq.ParquetFile(gen.files("findings")[0]).metadata.num_row_groups
    assert groups > 10
    read = pq.ParquetFile.read_row_groups
    asked: list[list[int]] = []
    monkeypatch.setattr(pq.ParquetFile, "read_row_groups", lambda self, row_groups, **options: (
        asked.append(list(row_groups)) or read(self, row_groups, **options)))
    keys = sorted({row["report_key"] for row in whole})
    for wanted in ([keys[0]], [keys[7], keys[30]], [keys[-1], 10**9]):
        rows = gen.table("findings", report_keys=wanted).to_pylist()
        assert rows == [row for row in whole if row["report_key"] in wanted] != []
        assert 0 < len(asked.pop()) <= 2 * len(wanted)
    concept = whole[0]["concept"]
    rows = gen.table("findings", ["sentence_id"], report_keys=keys[:5],
                     filters=[("concept", "=", concept)]).to_pylist()
    assert rows == [{"sentence_id": row["sentence_id"]} for row in whole
                    if row["report_key"] in keys[:5] and row["concept"] == concept]
    dropped = index.lookup.report_keys.tolist()
    assert gen.table("findings", report_keys=[k for k in range(60) if k not in dropped]
                     ).num_rows == 0


def test_a_segments_key_run_and_sentence_counts_give_the_rows_a_read_would(
    tmp_path: Path, sample: list[Report], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row lookup takes a segment's report keys from its key run when it has no gap and
    its row groups' statistics agree (no key column decoded), and reads them otherwise (a
    merge that dropped deleted reports leaves gaps); its sentences' keys and first rows come
    from the sentence counts every writer records (a build, an add, a merge); either way it
    equals a lookup that reads every key."""
    from clinsearch.index import row_lookup, tables
    from clinsearch.index.row_lookup import RowLookup

    monkeypatch.setattr(tables, "ROW_GROUP_ROWS", 7)
    index = Index.build(sample[:25], tmp_path / "idx", progress=False)
    index.add(sample[25:], progress=False)
    index.delete([sample[3].id, sample[30].id])

    def same_as_read(gen: Generation) -> None:
        taken = RowLookup(gen)
        with monkeypatch.context() as patched:
            patched.setattr(row_lookup, "_key_run", lambda segment, path: None)
            patched.setattr(Generation, "sentence_counts", lambda self, segment: None)
            read = RowLookup(gen)
        for name in ("report_keys", "report_row_by_key", "first_sentence_row",
                     "end_sentence_row"):
            assert np.array_equal(getattr(taken, name), getattr(read, name)), name
        assert list(taken.report_ids) == list(read.report_ids)
        assert np.array_equal(taken.sentence_report_row, read.sentence_report_row)
        assert list(taken.sentence_ids) == list(read.sentence_ids)
        assert all(gen.sentence_counts(s) is not None for s in gen.segments)

    gen = index.generation
    assert all(row_lookup._key_run(s, f) is not None for s, f in zip(
        gen.segments, gen.files("reports"), strict=True))
    same_as_read(gen)
    assert index.optimize() == 2  # one segment without the deleted reports: a gap at each
    merged = Index.open(index.path).generation
    assert row_lookup._key_run(merged.segments[0], merged.files("reports")[0]) is None
    same_as_read(merged)


def test_a_hits_columns_come_from_one_read_of_their_row_group(
    tmp_path: Path, sample: list[Report], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of hits shows each sentence's id, text and start and its report's ids: each row
    group holding one is read once for all of them, and gives what a whole read gives."""
    index = Index.build(sample, tmp_path / "idx", progress=False)
    lookup = index.lookup
    read = pq.ParquetFile.read_row_group
    asked: list[tuple[int, tuple[str, ...]]] = []
    monkeypatch.setattr(pq.ParquetFile, "read_row_group", lambda self, group, columns, **o: (
        asked.append((group, tuple(columns))) or read(self, group, columns, **o)))
    rows = np.array([0, 5, len(lookup.sentence_texts) - 1])
    whole = index.generation.table("sentences", ["id", "text", "start"]).to_pydict()
    assert lookup.sentence_texts.take(rows) == [whole["text"][r] for r in rows]
    assert lookup.sentence_ids.take(rows) == [whole["id"][r] for r in rows]
    assert lookup.sentence_starts.take(rows) == [whole["start"][r] for r in rows]
    reports = lookup.sentence_reports(rows)
    ids = index.generation.table("reports", ["id", "patient_id"]).to_pydict()
    assert lookup.report_ids.take(reports) == [ids["id"][r] for r in reports]
    assert lookup.patient_ids.take(reports) == [ids["patient_id"][r] for r in reports]
    assert asked and all(columns in (("id", "text", "start"), ("id", "visit_id", "patient_id"))
                         for _, columns in asked)
    assert len(asked) == len(set(asked))  # no row group read twice
