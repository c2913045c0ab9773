"""Fixtures for the evaluation tests: a hand-checked toy qrels/run pair written to disk."""

from __future__ import annotations

from pathlib import Path

import pytest

# Query A: relevant d1 (grade 2), d2 and d4 (grade 1); d3 and d7 judged not relevant.
# Query B: relevant e1, e2; the run ties e2 with unjudged e9.
# Query C: relevant c1; absent from the run.  Query D: no relevant document (not evaluated).
TOY_QRELS = """\
A 0 d1 2
A 0 d2 1
A 0 d3 0
A 0 d4 1
A 0 d7 0
B 0 e1 1
B 0 e2 1
C 0 c1 1
D 0 x1 0
"""

# Run ranks for A: d3, d1, d5 (unjudged), d2, d7, d6 (unjudged).
# Run ranks for B (ties by docid descending, as trec_eval): e9, e2, e1.
TOY_RUN = """\
A Q0 d3 1 0.9 toy
A Q0 d1 2 0.8 toy
A Q0 d5 3 0.7 toy
A Q0 d2 4 0.6 toy
A Q0 d7 5 0.5 toy
A Q0 d6 6 0.4 toy
B Q0 e2 1 1.0 toy
B Q0 e9 2 1.0 toy
B Q0 e1 3 0.5 toy
"""


@pytest.fixture
def toy_files(tmp_path: Path) -> tuple[Path, Path]:
    """The toy qrels and run written to files: (qrels, run)."""
    qrels, run = tmp_path / "toy.qrels", tmp_path / "toy.run"
    qrels.write_text(TOY_QRELS)
    run.write_text(TOY_RUN)
    return qrels, run


MINI_LEXICON = Path(__file__).parent / "mini_lexicon.yaml"

# Synthetic reports (written for the tests): positive and negated mentions of a few findings.
SENTENCES = {
    "r1": "FINDINGS: No pneumothorax. Small right pleural effusion.\nIMPRESSION: Right effusion.",
    "r2": "FINDINGS: No pneumothorax. No pleural effusion.\nIMPRESSION: Normal chest.",
    "r3": "FINDINGS: Mild cardiomegaly. No pneumothorax.\nIMPRESSION: Mild cardiomegaly.",
    "r4": "FINDINGS: Small left pleural effusion. Mild cardiomegaly.\nIMPRESSION: Left effusion.",
    "r5": "FINDINGS: No pleural effusion. Evaluate for pneumonia.\nIMPRESSION: No pneumothorax.",
    "r6": "FINDINGS: Cardiomegaly. Right pneumothorax.\nIMPRESSION: Right pneumothorax.",
}


@pytest.fixture(scope="session")
def mini_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small index of the synthetic reports (built once per session)."""
    from clinsearch import Index
    from clinsearch.corpus.model import Report

    path = tmp_path_factory.mktemp("evaluate") / "index"
    Index.build([Report(rid, text) for rid, text in SENTENCES.items()], path, progress=False)
    return path
