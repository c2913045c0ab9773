"""Generate the bundled sample corpus: synthetic chest X-ray reports written from our own templates.

Deterministic (seeded): ``python scripts/make_sample_corpus.py`` rewrites
``src/clinsearch/data/sample_reports.jsonl`` byte for byte. No real patient data is used: patients,
dates and wording are invented here. Each patient follows a clinical scenario over one or more
visits (normal, pneumonia, heart failure, ICU devices, pneumothorax, nodule, COPD, trauma).
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

SEED = 20261122
OUT = Path(__file__).resolve().parents[1] / "src" / "clinsearch" / "data" / "sample_reports.jsonl"

RIGHT_LOBES = ("right upper lobe", "right middle lobe", "right lower lobe")
LEFT_LOBES = ("left upper lobe", "lingula", "left lower lobe")
SIDES = ("right", "left")


@dataclass
class Study:
    """One report being written: its sections as lists of sentences."""

    indication: str
    portable: bool = False
    comparison: str = "None."
    findings: list[str] = field(default_factory=list)
    impression: list[str] = field(default_factory=list)
    numbered: bool = False


def normal_heart(rng: random.Random) -> str:
    """A sentence saying heart and mediastinum are normal."""
    return rng.choice(
        (
            "The heart size and mediastinal contours are within normal limits.",
            "Cardiomediastinal silhouette is normal in size and contour.",
            "Normal heart size.",
            "The cardiac silhouette is not enlarged.",
        )
    )


def normal_lungs(rng: random.Random, exclude: tuple[str, ...] = ()) -> str:
    """A negated list of common findings (coordinated negation), minus those present."""
    pool = [
        t for t in ("pneumothorax", "pleural effusion", "focal consolidation") if t not in exclude
    ]
    rng.shuffle(pool)
    if not pool:
        return "The lungs are otherwise clear."
    if len(pool) == 1:
        return f"There is no {pool[0]}."
    listed = ", ".join(pool[:-1]) + (", or " if len(pool) > 2 else " or ") + pool[-1]
    return rng.choice((f"No {listed}.", f"There is no {listed}.", f"No evidence of {listed}."))


def bones(rng: random.Random) -> str:
    """A bones sentence, usually unremarkable."""
    return rng.choice(
        (
            "The osseous structures are intact.",
            "No acute osseous abnormality.",
            "Mild degenerative changes of the thoracic spine.",
            "Visualized bones are unremarkable.",
        )
    )


def normal_impression(rng: random.Random) -> str:
    """A normal impression."""
    return rng.choice(
        (
            "No acute cardiopulmonary process.",
            "No acute cardiopulmonary abnormality.",
            "Normal chest radiograph.",
            "No radiographic evidence of acute disease.",
        )
    )


def scenario_normal(rng: random.Random, visits: int) -> list[Study]:
    """Healthy patient: every visit normal."""
    studies = []
    for _ in range(visits):
        s = Study(rng.choice(("Cough.", "Chest pain.", "Preoperative evaluation.", "Fever.")))
        s.findings = [normal_heart(rng), "The lungs are clear.", normal_lungs(rng), bones(rng)]
        s.impression = [normal_impression(rng)]
        studies.append(s)
    return studies


def scenario_pneumonia(rng: random.Random, visits: int) -> list[Study]:
    """Lobar pneumonia: new, then improving, then resolved."""
    lobe = rng.choice(RIGHT_LOBES + LEFT_LOBES)
    first = Study(rng.choice(("Fever and productive cough.", "Cough, rule out pneumonia.")))
    hedge = rng.choice(
        (
            f"Airspace opacity in the {lobe} may represent pneumonia.",
            f"New consolidation in the {lobe} with air bronchograms, compatible with pneumonia.",
            f"Patchy opacity in the {lobe}; infection cannot be excluded.",
            f"Focal opacity in the {lobe}, likely pneumonia versus atelectasis.",
        )
    )
    first.findings = [
        normal_heart(rng),
        hedge,
        normal_lungs(rng, exclude=("focal consolidation",)),
        bones(rng),
    ]
    first.impression = [
        f"{lobe.capitalize()} pneumonia.",
        "Recommend follow-up radiograph after treatment.",
    ]
    first.numbered = rng.random() < 0.4
    follow = [
        (
            f"Interval improvement of the {lobe} consolidation.",
            f"Improving {lobe} pneumonia.",
        ),
        (
            f"The previously seen {lobe} opacity has resolved.",
            f"Resolved {lobe} pneumonia.",
        ),
    ]
    studies = [first]
    for finding, impression in follow[: visits - 1]:
        s = Study("Follow-up pneumonia.")
        s.findings = [normal_heart(rng), finding, "No pleural effusion or pneumothorax."]
        s.impression = [impression]
        studies.append(s)
    return studies


def scenario_heart_failure(rng: random.Random, visits: int) -> list[Study]:
    """Congestive heart failure: edema and effusions, then improvement; cardiomegaly stable."""
    degree = rng.choice(("Mild", "Moderate"))
    first = Study(rng.choice(("Shortness of breath.", "Dyspnea and leg swelling.")))
    first.findings = [
        f"{degree} cardiomegaly.",
        "Pulmonary vascular congestion with interstitial edema.",
        rng.choice(
            ("Small bilateral pleural effusions.", "Small right and trace left pleural effusions.")
        ),
        "No pneumothorax.",
    ]
    if rng.random() < 0.5:
        first.findings.append(
            "Left chest wall pacemaker with leads in the right atrium and right ventricle."
        )
    first.impression = [
        f"{degree} cardiomegaly with mild pulmonary edema.",
        "Small bilateral pleural effusions.",
    ]
    first.numbered = True
    studies = [first]
    for later in range(1, visits):
        s = Study("Heart failure, follow-up.")
        edema = "Interval decrease in pulmonary edema." if later == 1 else "No pulmonary edema."
        s.findings = [
            f"Stable {degree.lower()} cardiomegaly.",
            edema,
            rng.choice(
                ("The pleural effusions have resolved.", "Trace residual left pleural effusion.")
            ),
        ]
        s.impression = [
            "Improved pulmonary edema." if later == 1 else "Resolved pulmonary edema.",
            "Stable cardiomegaly.",
        ]
        studies.append(s)
    return studies


def scenario_icu(rng: random.Random, visits: int) -> list[Study]:
    """Intubated patient: devices placed, a new basilar opacity, then extubation."""
    side = rng.choice(SIDES)
    distance = rng.choice(("3", "4", "4.5", "5"))
    first = Study("Intubated patient, line placement.", portable=True)
    first.findings = [
        f"Endotracheal tube tip terminates {distance} cm above the carina.",
        "Nasogastric tube courses below the diaphragm with tip in the stomach.",
        f"{side.capitalize()} PICC with tip at the cavoatrial junction.",
        "Bibasilar atelectasis.",
        "No pneumothorax.",
    ]
    first.impression = [
        "Support devices in satisfactory position.",
        "Bibasilar atelectasis.",
        "No pneumothorax.",
    ]
    first.numbered = True
    second = Study("Fever in intubated patient.", portable=True)
    second.findings = [
        "ETT and NG tube are unchanged in position.",
        f"New {side} basilar opacity, which may represent aspiration or atelectasis.",
        "Pneumonia cannot be excluded.",
        "No pleural effusion or pneumothorax.",
    ]
    second.impression = [f"New {side} basilar opacity, possibly aspiration."]
    third = Study("Status post extubation.", portable=True)
    third.findings = [
        "Interval removal of the endotracheal tube and nasogastric tube.",
        f"{side.capitalize()} PICC remains in place.",
        f"Improving {side} basilar opacity.",
        "No pneumothorax.",
    ]
    third.impression = ["Extubated.", f"Improving {side} basilar opacity."]
    return [first, second, third][:visits]


def scenario_pneumothorax(rng: random.Random, visits: int) -> list[Study]:
    """Pneumothorax after a procedure, treated with a chest tube, then resolved."""
    side = rng.choice(SIDES)
    size = rng.choice(("small", "moderate"))
    first = Study(rng.choice(("Status post lung biopsy.", "Sudden chest pain.")))
    first.findings = [
        f"There is a {size} {side} apical pneumothorax.",
        "No mediastinal shift.",
        normal_heart(rng),
    ]
    first.impression = [
        f"{size.capitalize()} {side} pneumothorax.",
        f"Findings discussed with {rng.choice(DOCTORS)} at {rng.randint(7, 11)}:15 a.m.",
    ]
    second = Study("Chest tube placement.", portable=True)
    second.findings = [
        f"{side.capitalize()} chest tube in place.",
        f"Decreased {side} pneumothorax, now tiny.",
        "No pleural effusion.",
    ]
    second.impression = [f"Decreased {side} pneumothorax after chest tube placement."]
    third = Study("Chest tube removed.")
    third.findings = [
        f"Interval removal of the {side} chest tube.",
        "No residual pneumothorax.",
        "The lungs are clear.",
    ]
    third.impression = [f"Resolved {side} pneumothorax."]
    return [first, second, third][:visits]


def scenario_nodule(rng: random.Random, visits: int) -> list[Study]:
    """Incidental pulmonary nodule, recommended for CT, stable at follow-up."""
    lobe = rng.choice(RIGHT_LOBES + LEFT_LOBES)
    size = rng.choice(("8 mm", "1.2 cm", "1.5 cm", "1 cm"))
    first = Study("Chronic cough.")
    first.findings = [
        normal_heart(rng),
        f"Nodular opacity measuring approx. {size} projects over the {lobe}.",
        "Malignancy cannot be excluded.",
        normal_lungs(rng, exclude=("focal consolidation",)),
    ]
    first.impression = [
        f"{lobe.capitalize()} nodule measuring {size}.",
        "Recommend CT of the chest for further evaluation.",
    ]
    first.numbered = rng.random() < 0.5
    studies = [first]
    for _ in range(visits - 1):
        s = Study("Follow-up pulmonary nodule.")
        s.findings = [f"The {lobe} nodule is stable in size.", "No new nodules.", normal_lungs(rng)]
        s.impression = [f"Stable {lobe} nodule."]
        studies.append(s)
    return studies


def scenario_copd(rng: random.Random, visits: int) -> list[Study]:
    """Emphysema: chronic hyperinflation, unchanged over time."""
    studies = []
    for i in range(visits):
        s = Study(rng.choice(("COPD exacerbation.", "Wheezing.")))
        s.findings = [
            "The lungs are hyperinflated with flattening of the hemidiaphragms.",
            "Emphysematous changes in the upper lobes." if i == 0 else "Unchanged emphysema.",
            normal_lungs(rng),
            normal_heart(rng),
        ]
        s.impression = ["Emphysema without acute process." if i == 0 else "Stable emphysema."]
        studies.append(s)
    return studies


def scenario_trauma(rng: random.Random, visits: int) -> list[Study]:
    """Rib fractures after a fall, without pneumothorax; healing on follow-up."""
    side = rng.choice(SIDES)
    ribs = rng.choice(("6th and 7th", "5th through 7th", "8th"))
    first = Study("Fall, chest wall pain.")
    first.findings = [
        f"Acute fractures of the {side} {ribs} ribs.",
        "No pneumothorax or hemothorax.",
        normal_heart(rng),
        "The lungs are clear.",
    ]
    first.impression = [f"Acute {side} rib fractures.", "No pneumothorax."]
    first.numbered = True
    studies = [first]
    for _ in range(visits - 1):
        s = Study("Follow-up rib fractures.")
        s.findings = [
            f"Healing {side} rib fractures.",
            "No pleural effusion.",
            "The lungs are clear.",
        ]
        s.impression = [f"Healing {side} rib fractures."]
        studies.append(s)
    return studies


SCENARIOS: dict[str, tuple[Callable[[random.Random, int], list[Study]], int]] = {
    # name -> (writer, patients)
    "normal": (scenario_normal, 28),
    "pneumonia": (scenario_pneumonia, 14),
    "heart-failure": (scenario_heart_failure, 10),
    "icu-devices": (scenario_icu, 9),
    "pneumothorax": (scenario_pneumothorax, 7),
    "nodule": (scenario_nodule, 8),
    "copd": (scenario_copd, 7),
    "trauma": (scenario_trauma, 6),
}
VISITS = {"icu-devices": (2, 3), "pneumothorax": (2, 3)}  # (fewest, most); others (1, 3)
DOCTORS = ("Dr. Okafor", "Dr. Lindqvist", "Dr. Patel", "Dr. Moreau")


def render(study: Study, previous: date | None) -> str:
    """The report text with headings; impressions numbered when the study says so."""
    exam = "Portable AP chest." if study.portable else "Chest, PA and lateral views."
    comparison = f"{previous.isoformat()}." if previous else "None."
    if study.numbered and len(study.impression) > 1:
        impression = "\n".join(f"{i}. {s}" for i, s in enumerate(study.impression, start=1))
    else:
        impression = " ".join(study.impression)
    return (
        f"EXAMINATION: {exam}\nINDICATION: {study.indication}\nCOMPARISON: {comparison}\n"
        f"FINDINGS: {' '.join(study.findings)}\nIMPRESSION: {impression}"
    )


def generate(seed: int = SEED) -> list[dict[str, str]]:
    """All sample reports, in patient then date order."""
    rng = random.Random(seed)
    rows: list[dict[str, str]] = []
    patient_number = 0
    for name, (writer, patients) in SCENARIOS.items():
        for _ in range(patients):
            patient_number += 1
            patient = f"P{patient_number:03d}"
            studies = writer(rng, rng.randint(*VISITS.get(name, (1, 3))))
            day = date(2019, 1, 1) + timedelta(days=rng.randint(0, 1400))
            previous: date | None = None
            for number, study in enumerate(studies, start=1):
                # ICU films belong to one admission (one visit), a day apart; others are new visits
                visit = f"{patient}-V1" if name == "icu-devices" else f"{patient}-V{number}"
                rows.append(
                    {
                        "id": f"{patient}-R{number}",
                        "patient_id": patient,
                        "visit_id": visit,
                        "type": "CXR portable" if study.portable else "CXR PA/lateral",
                        "date": day.isoformat(),
                        "text": render(study, previous),
                        "scenario": name,
                    }
                )
                previous = day
                day += timedelta(days=1 if name == "icu-devices" else rng.randint(14, 200))
    return rows


def write_rows(rows: list[dict[str, str]], out: Path) -> None:
    """Write rows as JSON Lines (UTF-8, one object per line)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def main() -> None:
    """Write the sample corpus as JSON Lines."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT, help="output JSONL file")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    rows = generate(args.seed)
    write_rows(rows, args.out)
    patients = len({row["patient_id"] for row in rows})
    print(f"wrote {len(rows)} reports for {patients} patients to {args.out}")


if __name__ == "__main__":
    main()
