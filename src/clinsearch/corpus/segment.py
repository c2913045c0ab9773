"""Segment reports into sections and sentences with exact character offsets into ``Report.text``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from clinsearch.corpus.model import Report, Section, SegmentedReport, Sentence, sentence_id
from clinsearch.corpus.sections import HEADINGS, HeadingFinder
from clinsearch.corpus.sentences import sentence_spans


class Segmenter:
    """Splits a report into sections (by heading) and sentences (rule-based, radiology-aware).

    A section spans from its heading to the next heading; text before any heading is section "".
    Sentences never include the heading itself. Compared with PyRuSH and PySBD by
    ``benchmarks/experiments/bench_segment.py`` (figures: benchmarks/README.md).
    """

    def __init__(self, headings: Mapping[str, str] = HEADINGS) -> None:
        self._headings = HeadingFinder(headings)

    def segment(self, report: Report) -> SegmentedReport:
        """The sections and sentences of ``report``."""
        text = report.text
        sections: list[Section] = []
        sentences: list[Sentence] = []
        for name, start, body_start, end in self._section_bounds(text):
            sections.append(Section(name, start, _rstrip(text, body_start, end)))
            for s, e in sentence_spans(text, body_start, end):
                index = len(sentences)
                sentences.append(
                    Sentence(sentence_id(report.id, index), report.id, index, name, s, e, text[s:e])
                )
        return SegmentedReport(report, tuple(sections), tuple(sentences))

    def segment_many(self, reports: Iterable[Report]) -> Iterator[SegmentedReport]:
        """Segment reports one at a time, as a stream."""
        for report in reports:
            yield self.segment(report)

    def _section_bounds(self, text: str) -> Iterator[tuple[str, int, int, int]]:
        """``(name, start, body_start, end)`` per section; the untitled lead one if not blank."""
        headings = self._headings.find(text)
        first = headings[0].start if headings else len(text)
        if text[:first].strip():
            yield "", _lstrip(text, 0, first), 0, first
        for i, heading in enumerate(headings):
            end = headings[i + 1].start if i + 1 < len(headings) else len(text)
            yield heading.name, heading.start, heading.body_start, end


def _lstrip(text: str, start: int, end: int) -> int:
    """The first non-space position in ``text[start:end]``."""
    while start < end and text[start].isspace():
        start += 1
    return start


def _rstrip(text: str, start: int, end: int) -> int:
    """The end of ``text[start:end]`` without trailing whitespace."""
    while end > start and text[end - 1].isspace():
        end -= 1
    return end
