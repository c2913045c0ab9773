"""Issue 38: a reading the whole report changes (a differential in the next sentence, a
contradiction between findings and impression) reaches the API with its rule and trigger words."""

from __future__ import annotations

from pathlib import Path

from clinsearch import Index, IndexConfig
from clinsearch.corpus.model import Report

from .conftest import serving

TEXT = ("FINDINGS: There is pneumothorax. Patchy right lower lobe opacity, representing"
        " pneumonia. Aspiration or edema are also possible.\n"
        "IMPRESSION: No acute cardiopulmonary disease.")


def test_the_report_view_shows_report_level_triggers(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    Index.build([Report(id="R1", patient_id="P1", visit_id="V1", text=TEXT)], index,
                IndexConfig(components=("bm25", "findings", "concepts")), progress=False)
    with serving(index, tmp_path / "audit.jsonl", tmp_path / "server.log") as server:
        view = server.call("GET", "/api/reports/R1", role=None).json()
    found = {f["concept"]: f for f in view["findings"]}
    text = view["report"]["text"]
    pneumonia, pneumothorax = found["pneumonia"], found["pneumothorax"]
    assert pneumonia["polarity"] == pneumothorax["polarity"] == "uncertain"
    assert (pneumonia["trigger"]["rule"], pneumonia["trigger"]["category"]) == (
        "differential in the next sentence", "DIFFERENTIAL")
    assert pneumothorax["trigger"]["rule"] == "impression says nothing acute"
    for trigger in (pneumonia["trigger"], pneumothorax["trigger"]):
        assert text[trigger["start"]:trigger["end"]] == trigger["text"]
    assert text.index("IMPRESSION") < pneumothorax["trigger"]["start"]
