"""``explain-query``: how a query was understood, as a JSON-ready dict and as a Rich table."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.phrase import check_phrase_words, read_phrase_query
from clinsearch.search.phrase import text_reason
from clinsearch.search.query_parser import MAP_THRESHOLD, ParsedQuery
from clinsearch.search.vocabulary import DefaultEncoder

if TYPE_CHECKING:
    from clinsearch.annotate.annotator import Annotator
    from clinsearch.search.concept.tools import ConceptTools


def explain_text(tools: ConceptTools, text: str) -> dict[str, Any]:
    """``explain_query`` of ``text`` as ``tools`` parse it; a text over the phrase bound
    (``clinsearch.limits``) is refused before it is parsed, as concept search refuses it."""
    check_phrase_words(text)
    return explain_query(tools.parser.parse(text), tools.hierarchy, tools.lexicon,
                         tools.parser.encoder, tools.parser.annotator)


def explain_query(parsed: ParsedQuery, hierarchy: Hierarchy, lexicon: Lexicon,
                  encoder: DefaultEncoder | None = None, annotator: Annotator | None = None
                  ) -> dict[str, Any]:
    """Pattern groups (with narrower concepts each one also matches) and unknown-word mappings,
    the term model (folder and fingerprint) ``encoder`` that computed the mappings, and, for a
    query concept search reads as a phrase, the phrase and polarity (``annotator`` reads it)."""
    groups = []
    for group in parsed.groups:
        patterns = []
        for f in group:
            narrower = sorted(c for c in hierarchy.descendants(f.concept) if c != f.concept)
            patterns.append({
                "pattern": f.pattern,
                "concept": f.concept,
                "name": f.name,
                "type": f.type,
                "polarity": f.polarity,
                "context": list(f.context),  # stated by the query: "history of" -> historical
                "text": f.text,
                "modifiers": [{"category": m.category, "value": m.value, "text": m.text}
                              for m in f.modifiers],
                "also_matches": [lexicon.concepts[c].name for c in narrower
                                 if c in lexicon.concepts],
            })
        groups.append(patterns)
    return {
        "query": parsed.text,
        "term_model": None if encoder is None else {"path": str(encoder.path),
                                                    "fingerprint": encoder.fingerprint},
        "groups": groups,
        "map_threshold": MAP_THRESHOLD,
        "approximate": sorted(parsed.approximate),
        "unknown_words": [
            {"phrase": m.phrase, "used": m.used,
             "nearest": [{"term": t.text, "kind": t.kind, "stands_for": t.ref,
                          "similarity": round(sim, 4)} for t, sim in m.nearest]}
            for m in parsed.mappings
        ],
        "as_text": _as_text(parsed, annotator),
    }


def _as_text(parsed: ParsedQuery, annotator: Annotator | None) -> dict[str, Any] | None:
    """How concept search reads a query that it searches as a phrase (None: by concept)."""
    why = text_reason(parsed)
    if not why or annotator is None:
        return None
    phrase = read_phrase_query(annotator, parsed.text)
    return {"reason": why, "phrase": phrase.phrase, "polarity": phrase.polarity,
            "context": list(phrase.context)}


def explain_table(explained: dict[str, Any]) -> Group:
    """The explanation as Rich renderables: one table of patterns, one of unknown words."""
    parts: list[Any] = [Text(f"query: {explained['query']}", style="bold")]
    patterns = Table(title="finding patterns (a hit must match one group)", title_justify="left")
    for name in ("group", "pattern", "concept", "polarity", "modifiers", "as written",
                 "also matches"):
        patterns.add_column(name)
    for i, group in enumerate(explained["groups"], start=1):
        for p in group:
            mods = ", ".join(f"{m['category']}={m['value']}" for m in p["modifiers"])
            also = ", ".join(p["also_matches"][:6]) + (" ..." if len(p["also_matches"]) > 6 else "")
            polarity = ", ".join([p["polarity"], *p["context"]])
            patterns.add_row(str(i), escape(p["pattern"]), escape(p["concept"]), polarity,
                             escape(mods), escape(p["text"]), escape(also))
    as_text = explained.get("as_text")
    if as_text:
        context = f" ({', '.join(as_text['context'])})" if as_text["context"] else ""
        patterns.caption = escape(f"{as_text['reason']}: the phrase \"{as_text['phrase']}\","
                                  f" {as_text['polarity']}{context}")
    elif not explained["groups"]:
        patterns.caption = "no lexicon finding in the query"
    elif explained.get("approximate"):
        patterns.caption = ("approximate (mapped by embedding, ranked below true matches): "
                            + ", ".join(explained["approximate"]))
    parts.append(patterns)
    if explained["unknown_words"]:
        threshold = explained.get("map_threshold", MAP_THRESHOLD)
        unknown = Table(title="words not in the lexicon: candidates by embedding similarity"
                        f" (used only at cosine >= {threshold:.2f})", title_justify="left")
        for name in ("phrase", "candidate lexicon terms (cosine)", "used"):
            unknown.add_column(name)
        for u in explained["unknown_words"]:
            near = "; ".join(f"{n['term']} -> {n['stands_for']} ({n['similarity']:.2f})"
                             for n in u["nearest"])
            unknown.add_row(escape(u["phrase"]), escape(near), "yes" if u["used"] else "no")
        if explained.get("term_model"):
            model = explained["term_model"]
            unknown.caption = escape(f"term model {model['path']} ({model['fingerprint']})")
        parts.append(unknown)
    return Group(*parts)
