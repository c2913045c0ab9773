"""How a query is understood, and the findings of a given text (no report data: not audited)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query

from clinsearch.errors import ClinsearchError
from clinsearch.limits import MAX_QUERY_TEXT
from clinsearch.server.bodies import RequestBody
from clinsearch.server.deps import Caller, State
from clinsearch.server.live import Snapshot
from clinsearch.server.records import finding_record
from clinsearch.text_checks import check_text

router = APIRouter(prefix="/api")


class AnnotateRequest(RequestBody):
    """Text to annotate."""

    text: str


@router.get("/explain-query", summary="How a query is understood (finding patterns)")
def explain(q: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_TEXT)], user: Caller,
            state: State) -> dict[str, Any]:
    """``explain_query`` with the live generation's lexicon and term encoder."""
    from clinsearch.search.concept.tools import index_concept_tools
    from clinsearch.search.explain_query import explain_text

    def run(snap: Snapshot) -> dict[str, Any]:
        return explain_text(index_concept_tools(snap.index), q)

    return state.live.run(run)


@router.post("/annotate", summary="Findings of a text (polarity, context, modifiers)")
def annotate(body: AnnotateRequest, user: Caller, state: State) -> dict[str, Any]:
    """The index's annotator over ``text``."""
    from clinsearch.annotate.annotator import annotator_for
    from clinsearch.search.concept.tools import index_lexicon_path

    if not body.text.strip():
        raise ClinsearchError("field 'text': empty text")
    check_text(body.text, "field 'text'")
    annotator = annotator_for(index_lexicon_path(state.live.snapshot.index))
    findings = annotator.annotate(body.text)
    return {"findings": [finding_record(f) for f in findings]}
