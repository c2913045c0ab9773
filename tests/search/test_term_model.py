"""A trained term model in concept search: --term-model on search, explain-query and cohort,
the index's recorded term model, bad folders, and train terms -> search end to end."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from clinsearch import Index
from clinsearch.cli import app
from clinsearch.models.encoder import load_encoder
from clinsearch.models.folder import default_encoder_path, fingerprint
from clinsearch.search.cohort import Cohort
from clinsearch.search.concept.retriever import ConceptRetriever

from ..tiny_models import build_tiny_bert
from .conftest import MINI_LEXICON

WORDS = ("pleural", "effusion", "fluid", "heart", "enlarged", "pneumonia", "lung", "collapsed",
         "pneumothorax", "cardiomegaly", "opacity", "right", "left", "lower", "lobe", "big")
CSV = (
    "rid,pid,body\n"
    "r1,p1,Right lower lobe pneumonia.\n"
    "r2,p1,No pneumonia. Small left pleural effusion.\n"
    "r3,p2,Enlarged heart. Large right pneumothorax.\n"
)


def run(*args: str | Path) -> tuple[int, str]:
    """Run the CLI in-process: exit code and stdout (all output when it fails)."""
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout if result.exit_code == 0 else result.output


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Term vectors go to a fresh cache folder per test."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("CLINSEARCH_CACHE", str(cache))
    return cache


@pytest.fixture
def tiny_terms(tmp_path: Path) -> Path:
    """A fresh tiny encoder folder (32-dimensional), standing in for a trained term model."""
    return build_tiny_bert(tmp_path / "tiny-terms", words=WORDS, seed=3)


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    """A small index with the test lexicon (bm25, findings, concepts)."""
    corpus = tmp_path / "reports.csv"
    corpus.write_text(CSV, encoding="utf-8")
    out = tmp_path / "idx"
    code, output = run("index", corpus, "-f", "csv", "-o", out, "--id-column", "rid",
                       "--text-columns", "body", "--patient-column", "pid",
                       "--lexicon", MINI_LEXICON)
    assert code == 0, output
    return out


def explain(*args: str | Path) -> dict:
    code, output = run("explain-query", *args, "--json")
    assert code == 0, output
    return json.loads(output)


def test_explain_query_maps_unknown_words_with_the_given_model(tiny_terms: Path,
                                                               _cache: Path) -> None:
    got = explain("fluid in the lung space", "--lexicon", MINI_LEXICON, "--term-model", tiny_terms)
    assert got["term_model"] == {"path": str(tiny_terms.resolve()),
                                 "fingerprint": fingerprint(tiny_terms.resolve())}
    assert got["term_model"]["fingerprint"] != fingerprint(default_encoder_path())
    # the lexicon's vectors were computed by the tiny model (32 wide) and cached
    (cached,) = _cache.glob("terms-*.npy")
    assert np.load(cached).shape[1] == 32
    # each reported similarity is the tiny model's cosine of phrase and term
    encoder = load_encoder(tiny_terms)
    (unknown, *_) = got["unknown_words"]
    near = unknown["nearest"][0]
    phrase, term = encoder.encode_queries([unknown["phrase"], near["term"]])
    assert near["similarity"] == pytest.approx(float(phrase @ term), abs=1e-3)
    default = explain("fluid in the lung space", "--lexicon", MINI_LEXICON)
    assert default["term_model"]["fingerprint"] == fingerprint(default_encoder_path())
    assert default["unknown_words"][0]["nearest"] != got["unknown_words"][0]["nearest"]


@pytest.mark.parametrize("command", ["explain-query", "search", "cohort"])
def test_missing_or_wrong_term_model_is_a_clean_error(command: str, tmp_path: Path,
                                                      index_dir: Path) -> None:
    not_model = tmp_path / "empty"
    not_model.mkdir()
    args = {"explain-query": ["explain-query", "pneumonia", "--index", index_dir],
            "search": ["search", index_dir, "pneumonia", "--method", "concept"],
            "cohort": ["cohort", index_dir, "pneumonia"]}[command]
    for bad, says in ((tmp_path / "nowhere", "does not exist"), (not_model, "config.json")):
        code, output = run(*args, "--term-model", bad)
        assert code == 2, output
        assert "term model folder" in output and says in output
        assert str(bad) in output.replace("\n", "")
    code, output = run("search", index_dir, "pneumonia", "--term-model", not_model,
                       "--method", "bm25")
    assert code == 2 and "--method concept or hybrid" in output


def test_index_records_its_term_model_and_the_option_overrides_it(
        tiny_terms: Path, tmp_path: Path) -> None:
    corpus = tmp_path / "reports.csv"
    corpus.write_text(CSV, encoding="utf-8")
    out = tmp_path / "idx"
    code, output = run("index", corpus, "-f", "csv", "-o", out, "--id-column", "rid",
                       "--text-columns", "body", "--lexicon", MINI_LEXICON,
                       "--term-model", tiny_terms)
    assert code == 0, output
    options = Index.open(out).config.options["concepts"]
    assert options["term_model"] == str(tiny_terms.resolve())
    tiny_print = fingerprint(tiny_terms.resolve())
    assert explain("heart is big", "--index", out)["term_model"]["fingerprint"] == tiny_print
    override = explain("heart is big", "--index", out, "--term-model", default_encoder_path())
    assert override["term_model"]["fingerprint"] == fingerprint(default_encoder_path())
    # the term model maps words; the pattern-similarity tie-break keeps the default vectors
    retriever = ConceptRetriever(Index.open(out))
    assert retriever.parser.encoder.fingerprint == tiny_print
    assert retriever.parser.vectors.vectors.shape[1] == 32
    assert retriever.ranker.vectors.vectors.shape[1] == 384
    default = ConceptRetriever(Index.open(out), term_model=default_encoder_path())
    assert np.array_equal(default.ranker.vectors.vectors, retriever.ranker.vectors.vectors)
    moved = tmp_path / "moved"
    shutil.move(tiny_terms, moved)
    code, output = run("search", out, "pneumonia", "--method", "concept", "--format", "json")
    assert code == 2 and "recorded in the config of index" in output
    code, output = run("search", out, "pneumonia", "--method", "concept", "--format", "json",
                       "--term-model", moved)
    assert code == 0, output
    assert json.loads(output)["hits"]


def test_bad_term_model_at_index_time_writes_nothing(tmp_path: Path) -> None:
    corpus = tmp_path / "reports.csv"
    corpus.write_text(CSV, encoding="utf-8")
    out = tmp_path / "idx"
    code, output = run("index", corpus, "-f", "csv", "-o", out, "--id-column", "rid",
                       "--text-columns", "body", "--term-model", tmp_path / "nowhere")
    assert code == 2 and "term model folder" in output
    assert not out.exists()


def test_python_api_takes_the_term_model(tiny_terms: Path, index_dir: Path) -> None:
    index = Index.open(index_dir)
    hits = index.search("right lower lobe pneumonia", "report", 5, "concept",
                        term_model=str(tiny_terms))
    assert [h.id for h in hits][:1] == ["r1"]
    hybrid = index.search("pneumonia", "report", 5, "hybrid", methods="bm25,concept",
                          term_model=str(tiny_terms))
    assert {h.id for h in hybrid} >= {"r1"}
    cohort = Cohort(index_dir, term_model=tiny_terms)
    assert cohort.tools.parser.encoder.fingerprint == fingerprint(tiny_terms.resolve())
    assert cohort.counts("pneumonia")["patient"] == 1
    with pytest.raises(Exception, match="needs concept among the fused methods"):
        index.search("pneumonia", "report", 5, "hybrid", methods="bm25,dense",
                     term_model=str(tiny_terms))


def test_train_terms_then_search_with_it(tiny_terms: Path, index_dir: Path,
                                         tmp_path: Path) -> None:
    out = tmp_path / "terms-model"
    code, output = run("train", "terms", "--out", out, "--lexicon", MINI_LEXICON,
                       "--base-model", tiny_terms, "--max-steps", "3", "--batch-size", "16",
                       "--warmup", "0", "--checkpoint-every", "0", "--threads", "1", "--quiet")
    assert code == 0, output
    got = explain("fluid in the pleural space", "--index", index_dir, "--term-model", out)
    assert got["term_model"]["fingerprint"] == fingerprint(out.resolve())
    assert got["term_model"]["fingerprint"] != fingerprint(tiny_terms.resolve())
    assert got["unknown_words"] and got["unknown_words"][0]["nearest"]
    code, output = run("search", index_dir, "right lower lobe pneumonia", "--method", "concept",
                       "--term-model", out, "--format", "json")
    assert code == 0, output
    assert json.loads(output)["hits"][0]["id"] == "r1"
    code, output = run("cohort", index_dir, "pneumonia AND NOT pneumothorax", "--json",
                       "--term-model", out)
    assert code == 0, output
    assert json.loads(output)["counts"]["patient"] == 1


def test_term_vectors_cache_is_private(tmp_path: Path) -> None:
    from clinsearch.search.vocabulary import _save_atomically

    path = tmp_path / "new-cache" / "terms-x.npy"
    _save_atomically(path, np.zeros((2, 3), np.float32))
    assert path.parent.stat().st_mode & 0o777 == 0o700
    assert path.stat().st_mode & 0o777 == 0o600
    assert np.load(path).shape == (2, 3)
