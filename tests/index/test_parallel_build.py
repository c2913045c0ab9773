"""A streaming build on worker processes writes exactly what a one-process build writes, and its
findings are those of annotating every sentence one by one (the build before caching), as each
report's impression concludes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import clinsearch.index.index_store as index_module
from clinsearch import Index, IndexConfig
from clinsearch.annotate.annotator import annotator_for
from clinsearch.annotate.context_rules import conclusion, section_contexts
from clinsearch.annotate.finding import Finding
from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path
from clinsearch.corpus.synthetic import sentence_pool, synthetic_reports
from clinsearch.index.concept_postings import ARRAYS
from clinsearch.index.conclusion import apply_conclusion

TABLES = ("reports.parquet", "sentences.parquet", "findings.parquet", "concepts/keys.parquet",
          "concepts/patterns.parquet", "concepts/values.parquet")


def test_parallel_build_equals_serial_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = sentence_pool(read_reports(sample_reports_path(), SAMPLE_FORMAT))
    reports = list(synthetic_reports(pool, 60, seed=7))
    monkeypatch.setattr(index_module, "_BATCH", 8)  # several batches of reports...
    config = IndexConfig(options={"findings": {"batch_size": 8}},  # ...and of sentences,
                         max_segment_reports=25)  # in three segments
    serial = Index.build(reports, tmp_path / "serial", config, progress=False, workers=1)
    parallel = Index.build(reports, tmp_path / "parallel", config, progress=False, workers=2)
    assert [s.reports for s in serial.generation.segments] == [25, 25, 10]
    files = sorted(p.relative_to(serial.generation.path) for p in
                   (serial.generation.path / "segments").rglob("*.parquet"))
    assert len(files) == 3 * len(TABLES)
    for name in files:
        assert pq.read_table(serial.generation.path / name).equals(
            pq.read_table(parallel.generation.path / name)
        ), name
    arrays = sorted(p.relative_to(serial.generation.path) for p in
                    (serial.generation.path / "segments").rglob("*.npy"))
    assert len(arrays) == 3 * (len(ARRAYS) + 1)  # and each segment's sentence counts
    for name in arrays:
        assert np.array_equal(np.load(serial.generation.path / name),
                              np.load(parallel.generation.path / name)), name
    sentences = serial.generation.table("sentences").to_pylist()
    assert len(sentences) > 200 and len({s["text"] for s in sentences}) < len(sentences)
    annotator = annotator_for(None)
    one_by_one = [
        _expected_row(sentence, finding)
        for sentence in sentences
        for finding in annotator.annotate(sentence["text"])
    ]
    assert serial.component("findings").table().to_pylist() == concluded(one_by_one, sentences)
    for query in ("pleural effusion", "no pneumothorax", "right lower lobe pneumonia"):
        assert [(h.id, h.score) for h in serial.search(query, top=20)] == [
            (h.id, h.score) for h in parallel.search(query, top=20)
        ]
    assert serial.manifest.counts == parallel.manifest.counts


def concluded(rows: list[dict], sentences: list[dict]) -> list[dict]:
    """``rows`` as each report's conclusion reads them (``index.conclusion``, per report)."""
    columns: dict = {name: [r[name] for r in rows] for name in rows[0]}
    for name in ("report_key", "section"):
        columns[name] = pa.array(columns[name])
    rule = conclusion()
    assert rule is not None
    apply_conclusion(columns, pa.Table.from_pylist(sentences), rule)
    plain = {name: v.to_pylist() if isinstance(v, pa.Array) else v for name, v in columns.items()}
    return [dict(zip(plain, values, strict=True)) for values in zip(*plain.values(), strict=True)]


def _expected_row(sentence: dict, f: Finding) -> dict:
    """The findings row of one finding of a sentence, written out field by field (the oracle
    for the build's column-wise assembly): offsets shifted into the report text, the section's
    meaning applied (its context flag; the section the trigger when nothing else is)."""
    base = sentence["start"]
    context, trigger = list(f.context), f.trigger and {
        "rule": f.trigger.rule, "category": f.trigger.category, "text": f.trigger.text,
        "start": base + f.trigger.start, "end": base + f.trigger.end}
    flag = section_contexts().get(sentence["section"])
    if flag and flag not in context:
        context = sorted([*context, flag])
        trigger = trigger or {"rule": "section", "category": "SECTION",
                              "text": sentence["section"], "start": None, "end": None}
    return {
        "report_key": sentence["report_key"], "sentence_id": sentence["id"],
        "sentence_index": sentence["index"], "report_id": sentence["report_id"],
        "visit_id": sentence["visit_id"], "patient_id": sentence["patient_id"],
        "section": sentence["section"], "concept": f.concept, "name": f.name, "type": f.type,
        "polarity": f.polarity, "context": context,
        "modifiers": [{"category": m.category, "value": m.value, "text": m.text,
                       "start": base + m.start, "end": base + m.end} for m in f.modifiers],
        "pattern": f.pattern, "start": base + f.start, "end": base + f.end, "text": f.text,
        "trigger": trigger,
    }
