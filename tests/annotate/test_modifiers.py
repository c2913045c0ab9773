"""Modifiers with the shipped lexicon: location words that locate a finding are not findings."""

from __future__ import annotations

from clinsearch.annotate.annotator import Annotator


def patterns(annotator: Annotator, text: str) -> list[str]:
    return [f.pattern for f in annotator.annotate(text)]


def test_hedge_cue_yields_no_finding(shipped_annotator: Annotator) -> None:
    assert patterns(shipped_annotator, "Right lower lobe pneumonia cannot be excluded.") == [
        "disease|uncertain|pneumonia|right|lower lobe"
    ]


def test_location_word_of_a_finding_is_not_a_finding(shipped_annotator: Annotator) -> None:
    assert patterns(shipped_annotator, "Patchy opacity in the left lobe.") == [
        "finding|present|opacity|left|lobar"
    ]
    assert patterns(shipped_annotator, "Scarring at the lung apices.") == [
        "finding|present|scarring|apex"
    ]
    assert patterns(shipped_annotator, "Opacity in the lingula.") == [
        "finding|present|opacity|lingula"
    ]


def test_location_word_alone_in_its_clause_stays_anatomy(shipped_annotator: Annotator) -> None:
    assert patterns(shipped_annotator, "Lung bases are clear.") == ["anatomy|present|lung|base"]
    assert patterns(shipped_annotator, "Opacity is seen; the lingula is clear.") == [
        "finding|present|opacity",
        "anatomy|present|lung|lingula",
    ]


def test_size_words_are_sizes_and_intensifiers_are_not_severity(
    shipped_annotator: Annotator,
) -> None:
    assert patterns(shipped_annotator, "Small left pleural effusion.") == [
        "finding|present|pleural effusion|left|small"
    ]
    assert patterns(shipped_annotator, "Large hiatal hernia.") == [
        "finding|present|hiatal hernia|large"
    ]
    assert patterns(shipped_annotator, "Prominent hilar lymph nodes.") == [
        "anatomy|present|lymph nodes|hilum"
    ]
    assert patterns(shipped_annotator, "Grossly clear lungs.") == ["anatomy|present|lung"]
