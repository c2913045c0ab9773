"""Seeded synthetic corpora for benchmarks and scale tests: real sentences, recombined.

Sentences of a source corpus (the bundled sample, or IU X-ray) are drawn per section into new
reports; about half of the drawn sentences get a variant ending ("on image 41"), so roughly
half the sentences of a large corpus are distinct, as in a real archive. The same seed gives
the same corpus; reports stream, so any size fits in memory.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator
from pathlib import Path

from clinsearch.corpus.model import Report
from clinsearch.corpus.segment import Segmenter

SECTIONS = ("findings", "impression")
_SIZES = {"findings": (2, 6), "impression": (1, 2)}


def sentence_pool(reports: Iterable[Report]) -> dict[str, list[str]]:
    """The distinct sentences of ``reports`` per section (findings, impression)."""
    pool: dict[str, dict[str, None]] = {name: {} for name in SECTIONS}
    segmenter = Segmenter()
    for seg in segmenter.segment_many(reports):
        for sentence in seg.sentences:
            section = sentence.section.lower()
            if section in pool and len(sentence.text) > 3:
                pool[section][sentence.text] = None
    return {name: list(texts) for name, texts in pool.items()}


def synthetic_reports(
    pool: dict[str, list[str]], count: int, seed: int = 0, start: int = 0,
    reports_per_patient: int = 3,
) -> Iterator[Report]:
    """``count`` reports ``syn-{start}``... drawn from ``pool``, ``reports_per_patient`` to a
    patient (two to a visit): 1 gives as many patients as reports, a larger number few."""
    if reports_per_patient < 1:
        raise ValueError("reports_per_patient must be at least 1")
    rng = random.Random(seed * 1_000_003 + start)
    for number in range(start, start + count):
        parts = []
        for section in SECTIONS:
            low, high = _SIZES[section]
            size = rng.randint(low, high)
            drawn = [_variant(rng, rng.choice(pool[section])) for _ in range(size)]
            parts.append(f"{section.upper()}: {' '.join(drawn)}")
        patient = number // reports_per_patient
        yield Report(
            id=f"syn-{number}",
            text="\n".join(parts),
            patient_id=f"P{patient}",
            visit_id=f"P{patient}-V{number % reports_per_patient // 2}",
            type="chest x-ray",
            date=f"20{10 + number % 14:02d}-{1 + number % 12:02d}-{1 + number % 28:02d}",
            source=f"synthetic:{number + 1}",
        )


def _variant(rng: random.Random, sentence: str) -> str:
    """The sentence, or (half the time) the sentence with a distinct ending."""
    if rng.random() < 0.5:
        return sentence
    body = sentence.rstrip(". ")
    return f"{body} on image {rng.randint(1, 400_000)}."


def default_source() -> tuple[Path, str]:
    """IU X-ray when the shared data is present, else the bundled sample: (path, format)."""
    from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path
    from clinsearch.datasets import IU_XRAY, shared_data

    iu = shared_data(IU_XRAY)
    return (iu, "iu-xray") if iu is not None else (sample_reports_path(), SAMPLE_FORMAT)
