"""Report filters compare type and section as cohort filters do, and a session keeps a bounded
number of retrievers however many filter values a server is sent."""

from __future__ import annotations

from clinsearch import Index
from clinsearch.search.filters import ReportFilters
from clinsearch.search.session import MAX_RETRIEVERS


def _ids(index: Index, section: str) -> list[str]:
    hits = index.search("pneumonia", level="sentence", top=5, method="bm25",
                        filters=ReportFilters(section=section))
    return [h.id for h in hits]


def test_section_filter_ignores_case_and_punctuation(index: Index) -> None:
    wanted = _ids(index, "impression")
    assert wanted
    assert _ids(index, "IMPRESSION") == wanted
    assert _ids(index, " Impression: ") == wanted
    assert _ids(index, "findings") != wanted


def test_session_keeps_a_bounded_number_of_retrievers(index: Index) -> None:
    for day in range(1, MAX_RETRIEVERS + 9):
        index.search("pneumonia", method="bm25",
                     filters=ReportFilters(date_from=f"2020-01-{day % 28 + 1:02d}",
                                           date_to=f"2021-{day % 12 + 1:02d}-01"))
    assert len(index.session._retrievers) <= MAX_RETRIEVERS
