"""A seeded random corpus (reports, sentences, findings rows) for cohort and ranking tests."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pyarrow as pa

CONCEPTS = {  # concept -> (type, parent)
    "pneumonia": ("disease", ""),
    "lobar_pneumonia": ("disease", "pneumonia"),
    "pleural_effusion": ("finding", ""),
    "pneumothorax": ("finding", ""),
    "cardiomegaly": ("finding", ""),
    "atelectasis": ("finding", ""),
}
MODIFIERS = ["right", "left", "bilateral", "lower lobe", "upper lobe", "mild", "new"]
TYPES = ["CHEST XRAY", "CT CHEST"]
SECTIONS = ["findings", "impression"]
WORDS = ["port", "catheter", "clear", "stable", "normal", "heart", "lungs"]


@dataclass
class Corpus:
    """Rows as dicts (for brute-force loops) and as Arrow tables (for the engine)."""

    reports: list[dict] = field(default_factory=list)
    sentences: list[dict] = field(default_factory=list)
    findings: list[dict] = field(default_factory=list)

    def arrow(self) -> tuple[pa.Table, pa.Table, pa.Table]:
        return (
            pa.Table.from_pylist(self.reports),
            pa.Table.from_pylist(self.sentences),
            pa.Table.from_pylist(self.findings),
        )


def generate(seed: int, patients: int = 60) -> Corpus:
    """Patients with 1-3 visits of 1-2 reports of 0-5 sentences, each with 0-3 findings."""
    rng = random.Random(seed)
    corpus = Corpus()
    for p in range(patients):
        for v in range(rng.randint(1, 3)):
            for r in range(rng.randint(1, 2)):
                rid = f"R{p:03d}-{v}-{r}"
                year, month = rng.randint(18, 22), rng.randint(1, 9)
                date = "" if rng.random() < 0.1 else f"20{year}-0{month}-1{r}"
                corpus.reports.append(  # visit ids repeat across patients, as they may
                    {"id": rid, "patient_id": f"P{p:03d}", "visit_id": f"V{v}",
                     "type": rng.choice(TYPES), "date": date, "text": "", "metadata": "{}"}
                )
                for s in range(rng.randint(0, 5)):
                    _sentence(rng, corpus, rid, f"V{v}", f"P{p:03d}", s)
    return corpus


def _sentence(rng: random.Random, corpus: Corpus, rid: str, vid: str, pid: str, idx: int) -> None:
    sid = f"{rid}#{idx}"
    text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
    section = rng.choice(SECTIONS)
    corpus.sentences.append(
        {"id": sid, "report_id": rid, "visit_id": vid, "patient_id": pid, "index": idx,
         "section": section, "start": 0, "end": len(text), "text": text}
    )
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        concept = rng.choice(list(CONCEPTS))
        ftype = CONCEPTS[concept][0]
        polarity = rng.choice(["present", "present", "absent", "uncertain"])
        mods = sorted(set(rng.sample(MODIFIERS, rng.choice([0, 0, 1, 2]))))
        corpus.findings.append(
            {"sentence_id": sid, "report_id": rid, "visit_id": vid, "patient_id": pid,
             "section": section, "concept": concept, "type": ftype, "polarity": polarity,
             "context": [], "modifiers": mods,
             "pattern": "|".join([ftype, polarity, concept, *mods]),
             "start": 0, "end": 1, "text": concept}
        )
