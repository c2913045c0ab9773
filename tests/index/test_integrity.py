"""Integrity: every file's checksum is in the manifest, ``check`` finds a flipped byte in any
file, and parts that disagree are named."""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from clinsearch import Index, IndexConfig
from clinsearch.cli import app
from clinsearch.corpus.model import SegmentedReport
from clinsearch.index.integrity import check_index, file_digests
from clinsearch.index.manifest import MANIFEST_FILE, Manifest

from ..tiny_models import build_tiny_bert

SEGMENT = "segments/s000001"


@pytest.fixture(scope="module")
def full_index(tmp_path_factory: pytest.TempPathFactory, corpus: list[SegmentedReport]) -> Path:
    """An index with every component (dense with a tiny encoder), built once."""
    model = build_tiny_bert(tmp_path_factory.mktemp("tiny-encoder"))
    config = IndexConfig(
        components=("bm25", "findings", "concepts", "dense"),
        options={"dense": {"model": str(model)}},
    )
    root = tmp_path_factory.mktemp("full") / "idx"
    Index.build(corpus, root, config, progress=False).close()
    return root


def test_manifest_records_every_file(full_index: Path) -> None:
    gen = full_index / (full_index / "CURRENT").read_text().strip()
    manifest = Manifest.read(gen)
    assert manifest.files == file_digests(gen)
    expected = {"segments/s000001/reports.parquet", "segments/s000001/findings.parquet",
                "segments/s000001/sentence_counts.npy", "dense/vectors-000001.npy"}
    assert expected <= set(manifest.files)
    assert any(name.startswith("lexical/sentences/") for name in manifest.files)
    assert check_index(full_index) == (len(manifest.files), [])
    result = CliRunner().invoke(app, ["check", str(full_index)])
    assert result.exit_code == 0 and "ok (" in result.output


def test_a_flipped_byte_in_any_file_is_found(full_index: Path, tmp_path: Path) -> None:
    gen_name = (full_index / "CURRENT").read_text().strip()
    names = [*Manifest.read(full_index / gen_name).files, MANIFEST_FILE]
    assert len(names) > 20
    for name in names:
        copy = tmp_path / name.replace("/", "_")
        shutil.copytree(full_index, copy)
        target = copy / gen_name / name
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0x01
        target.write_bytes(bytes(data))
        _, problems = check_index(copy)
        assert problems, name
        assert str(target) in problems[0] or name == MANIFEST_FILE, (name, problems)
        shutil.rmtree(copy)


def test_parts_that_disagree_are_named(full_index: Path, tmp_path: Path) -> None:
    root = tmp_path / "idx"
    shutil.copytree(full_index, root)
    gen = root / (root / "CURRENT").read_text().strip()
    sentences = pq.read_table(gen / SEGMENT / "sentences.parquet")
    pq.write_table(sentences.slice(1), gen / SEGMENT / "sentences.parquet")  # one sentence lost
    _reseal(gen)  # as if a bug, not a damaged disk, had written it
    _, problems = check_index(root)
    text = "\n".join(problems)
    assert "sentences, the manifest says 16" in text
    assert "sentence_counts.npy: sentences per report disagree with the sentences" in text
    assert "lexical/sentences: 16 BM25 documents do not match" in text
    assert "dense: vectors of 16 sentences do not match the 15 sentences" in text
    assert "finding(s) point at sentences that are not in the sentences table" in text
    result = CliRunner().invoke(app, ["check", str(root)])
    assert result.exit_code == 1 and "problem(s) found" in result.output


def _reseal(gen: Path) -> None:
    """Record the files' current checksums in the manifest, sealed again."""
    manifest = Manifest.read(gen)
    replace(manifest, files=file_digests(gen)).write(gen)
