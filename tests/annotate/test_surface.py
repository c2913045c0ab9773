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


def test_the_shared_tokenizer_is_medspacys_clinical_one() -> None:
    from medspacy.custom_tokenizer import create_medspacy_tokenizer
    from spacy.lang.en import English

    reference = create_medspacy_tokenizer(English())
    shared = tokenizer()
    def setting_of(tok: object, name: str) -> object:
        # a regex's bound method equals another only on the same compiled object, which
        # re's cache may have let go since: compare the patterns
        value = getattr(tok, name)
        return getattr(getattr(value, "__self__", None), "pattern", value)

    for setting in ("prefix_search", "suffix_search", "infix_finditer", "token_match",
                    "url_match", "faster_heuristics", "rules"):
        assert setting_of(shared, setting) == setting_of(reference, setting), setting
    text = "Pt c/o chf+cp; R-sided 1.5cm opacity (see http://x.org), can't exclude PNA."
    assert [t.text for t in shared(text)] == [t.text for t in reference(text)]
