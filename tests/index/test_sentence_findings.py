"""The findings a search hit shows of its sentence, read for many sentences at once."""

from __future__ import annotations

from clinsearch import Index
from clinsearch.index.report_view import SentenceFindings


def test_each_sentence_gets_its_own_findings_with_offsets_into_it(built: Index) -> None:
    sentences = built.generation.table("sentences", ["id", "text"]).to_pylist()
    findings = SentenceFindings(built.generation)
    ids = [s["id"] for s in sentences] + ["no-such-sentence"]
    many = findings.of_many(ids)
    assert many == [findings.of(i) for i in ids] and many[-1] == []
    assert sum(map(len, many)) > len(sentences) // 2
    for sentence, found in zip(sentences, many, strict=False):
        for finding in found:
            assert sentence["text"][finding.start:finding.end] == finding.text
        assert [f.start for f in found] == sorted(f.start for f in found)
