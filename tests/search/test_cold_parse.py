"""A cold query parse loads only what the query needs (issue 16, item 7; timed in
benchmarks/performance/bench_cold_start.py, never here).

In a fresh Python process, parsing concept queries and cohort terms must not import torch,
SciPy or scikit-learn nor run NLTK or langcodes (``annotate.quiet_imports``), nor build
ConText's rule matchers for queries without a cue (``LazyConText``), nor any PyRuSH sentence
splitter; a query with a cue builds those of its candidate rules and is read as before. A cold
search or cohort never imports pandas (``arrow_numbers``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from clinsearch import Index

PARSE = """
import json, sys
from clinsearch.search.concept.tools import concept_tools
tools = concept_tools()
queries = ["right lower lobe pneumonia", "pneumonia", "pleural effusion"]
parsed = [tools.parser.parse(q, map_unknown=False) for q in queries]
context = tools.parser.annotator.context
out = {"patterns": [p.patterns for p in parsed], "built": context.built,
       "pipes": tools.parser.annotator.nlp.pipe_names,
       "loaded": sorted(m for m in ("torch", "scipy", "sklearn") if m in sys.modules),
       "ran": sorted(m for m in ("nltk.tokenize", "langcodes.tag_parser") if m in sys.modules)}
out["negated"] = tools.parser.parse("no pneumothorax").patterns
out["built_after_cue"] = [context.built, context.subsets]
print(json.dumps(out))
"""


def test_parsing_queries_in_a_fresh_process_loads_only_what_they_need() -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    done = subprocess.run([sys.executable, "-c", PARSE], capture_output=True, text=True,
                          env=env, check=True, timeout=120)
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["loaded"] == []  # no torch, SciPy or scikit-learn
    assert out["ran"] == []  # NLTK and langcodes imported but not run
    assert out["pipes"] == ["sentencizer"]  # no PyRuSH, no ConText matchers yet
    assert out["built"] is False
    assert out["patterns"][0] == ["disease|present|pneumonia|right|lower lobe"]
    assert out["negated"] == ["finding|absent|pneumothorax"]
    assert out["built_after_cue"] == [False, 1]  # a ConText of its few candidate rules


COMMAND = """
import sys
from clinsearch.cli import app
app(sys.argv[1:], standalone_mode=False)
print("medspacy loaded:", "medspacy" in sys.modules)
print("pandas loaded:", "pandas" in sys.modules)
"""


def test_a_cold_query_never_imports_pandas(index: Index) -> None:
    """Searches and a cohort (its findings from the concept postings as NumPy arrays and Arrow
    buffers, its DuckDB connection registering no dataset)."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    path = str(index.path)
    for args in (("search", path, "pleural effusion", "--method", "bm25"),
                 ("search", path, "no pneumothorax", "--method", "concept"),
                 ("search", path, "no pneumothorax", "--method", "bm25", "--polarity", "absent"),
                 ("cohort", path, "pneumothorax OR right pleural effusion", "--json")):
        done = subprocess.run([sys.executable, "-c", COMMAND, *args], capture_output=True,
                              text=True, env=env, check=True, timeout=120)
        assert done.stdout.strip().splitlines()[-1] == "pandas loaded: False", args
        if args[-1] == "bm25":  # a plain BM25 search reads no ConText rules at all
            assert done.stdout.strip().splitlines()[-2] == "medspacy loaded: False"
    assert '"counts"' in done.stdout


QUICK = """
import atexit, sys
atexit.register(lambda: print("torn down"))
from clinsearch.cli import main
sys.argv = ["clinsearch", *sys.argv[1:]]
main()
"""


def test_a_query_command_leaves_without_teardown_and_keeps_its_exit_status(index: Index) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", QUICK, *args], capture_output=True,
                              text=True, env=env, timeout=120)

    done = run("search", str(index.path), "pleural effusion", "--method", "bm25", "--format",
               "trec")
    assert done.returncode == 0 and "torn down" not in done.stdout
    assert len(done.stdout.strip().splitlines()) >= 2  # every hit written before it left
    refused = run("search", str(index.path), "", "--method", "bm25")
    assert refused.returncode == 2 and "empty query" in refused.stderr
    assert "torn down" in run("info", str(index.path)).stdout  # other commands end as usual
