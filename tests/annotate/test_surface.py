"""Surface variants of lexicon terms and gapped matching in the surface index."""

from __future__ import annotations

from clinsearch.annotate.surface import term_variants, text_keys, tokenizer
from clinsearch.annotate.surface_index import SurfaceIndex


def test_copula_and_article_variants() -> None:
    assert ("hilum", "appears", "prominent") in term_variants("hilum is prominent")
    assert ("hila", "appear", "enlarged") in term_variants("hila are enlarged")
    assert ("prominence", "of", "mediastinum") in term_variants("prominence of the mediastinum")
    assert ("the", "hilum") in term_variants("the hilum")  # "the" alone stays


def test_gapped_match_must_skip_an_inner_word() -> None:
    index = SurfaceIndex()
    index.add_term("flattened diaphragm", "fd")
    index.add_term("diaphragm", "d")
    doc = tokenizer()("flattened posterior diaphragm")
    keys = text_keys(doc)
    assert index.find(doc) == [("d", 2, 3)]
    assert index.find_with_gaps(doc, keys, [frozenset({1})]) == [("fd", 0, 3)]
    # a gap at the edge of a match adds nothing: the plain match stands
    edge = tokenizer()("posterior diaphragm")
    assert index.find_with_gaps(edge, text_keys(edge), [frozenset({0})]) == [("d", 1, 2)]
