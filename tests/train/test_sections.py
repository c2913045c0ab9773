"""(entity, section) self-supervised queries over sectioned passages."""

from __future__ import annotations

from clinsearch.train.labels import FindingFacts, LabelSentence
from clinsearch.train.sections import section_queries


def _s(rid: str, i: int, section: str, text: str, *facts: FindingFacts) -> LabelSentence:
    return LabelSentence(f"{rid}#{i}", text, facts, section=section, report_id=rid)


def test_queries_pair_a_finding_with_its_section_heading() -> None:
    ptx_no = FindingFacts("pneumothorax", "pneumothorax", "finding", "absent")
    eff = FindingFacts("pleural_effusion", "pleural effusion", "finding", "present")
    sentences = [
        _s("r1", 0, "findings", "No pneumothorax.", ptx_no),
        _s("r1", 1, "findings", "Small effusion.", eff),
        _s("r1", 2, "impression", "No pneumothorax.", ptx_no),
        _s("r2", 0, "impression", "Effusion. No pneumothorax.", eff, ptx_no),
        _s("r3", 0, "", "No pneumothorax.", ptx_no),
    ]
    queries, passages = section_queries(sentences)
    assert passages["r1@findings"] == "No pneumothorax. Small effusion."
    assert "r3@" not in passages
    by_text = {q.variants[0]: set(q.matched) for q in queries}
    assert by_text["impression: no pneumothorax"] == {"r1@impression", "r2@impression"}
    assert by_text["findings: no pneumothorax"] == {"r1@findings"}
    assert by_text["impression: pleural effusion"] == {"r2@impression"}
    assert "pleural effusion in findings" in next(
        q.variants for q in queries if q.variants[0] == "findings: pleural effusion")
