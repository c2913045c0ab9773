"""``clinsearch index`` and ``add`` compute concept search's term vectors (cached per lexicon
and term model), so the first search does not spend a silent minute on them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from clinsearch.annotate.lexicon import Lexicon
from clinsearch.cli import app
from clinsearch.corpus.sample import sample_reports_path
from clinsearch.search.vocabulary import lexicon_terms

from .conftest import MINI_LEXICON


def test_index_and_add_leave_the_term_vectors_cached(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("CLINSEARCH_CACHE", str(cache))
    lexicon = tmp_path / "lexicon.yaml"  # a path no earlier test loaded its tools from
    shutil.copy(MINI_LEXICON, lexicon)
    runner = CliRunner()
    built = runner.invoke(app, ["index", str(sample_reports_path()), "--format", "jsonl",
                                "--out", str(tmp_path / "idx"), "--lexicon", str(lexicon)])
    assert built.exit_code == 0, built.stderr
    assert "term vectors for concept search ready" in built.stderr
    (cached,) = cache.glob("terms-*.npy")
    terms = lexicon_terms(Lexicon.load(lexicon))
    assert np.load(cached).shape[0] == len(terms)
    assert f"({len(terms):,} lexicon terms" in built.stderr
    assert (cached.stat().st_mode & 0o777) == 0o600

    more = tmp_path / "more.jsonl"
    more.write_text(json.dumps({"id": "X1", "patient_id": "X", "text": "No effusion."}) + "\n")
    stamp = cached.stat().st_mtime_ns
    added = runner.invoke(app, ["add", str(tmp_path / "idx"), str(more), "--format", "jsonl"])
    assert added.exit_code == 0, added.stderr
    assert "term vectors for concept search ready" in added.stderr
    assert cached.stat().st_mtime_ns == stamp  # read from the cache, not computed again
