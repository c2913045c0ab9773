"""Modifiers with the shipped lexicon: location words that locate a finding are not findings."""

from __future__ import annotations

import pytest

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
        "finding|present|scarring|bilateral|apex"
    ]
    assert patterns(shipped_annotator, "Opacity in the lingula.") == [
        "finding|present|opacity|lingula"
    ]


def test_location_word_alone_in_its_clause_stays_anatomy(shipped_annotator: Annotator) -> None:
    # a normal statement also rules out the lexicon's normal_denies of the anatomy, in place
    assert patterns(shipped_annotator, "Lung bases are clear.")[:2] == [
        "anatomy|present|lung|bilateral|base", "finding|absent|airspace disease|bilateral|base"
    ]
    assert patterns(shipped_annotator, "Opacity is seen; the lingula is clear.")[:2] == [
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
    assert patterns(shipped_annotator, "Grossly clear lungs.")[0] == "anatomy|present|lung"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Minimal scarring or atelectasis in the left lung base.",  # alternatives: hedged
         ["finding|uncertain|scarring|left|base|minimal",
          "finding|uncertain|atelectasis|left|base|minimal"]),
        ("Bibasilar atelectasis/airspace disease.",
         ["finding|present|atelectasis|bilateral|base",
          "finding|present|airspace disease|bilateral|base"]),
        ("Atelectasis and effusion at the left base.",
         ["finding|present|atelectasis|left|base",
          "finding|present|pleural effusion|left|base"]),
        # a list takes only a modifier written after it: "small right" is the effusion's
        ("Small right effusion and atelectasis.",
         ["finding|present|pleural effusion|right|small", "finding|present|atelectasis"]),
        ("Mild cardiomegaly and pulmonary edema.",
         ["finding|present|cardiomegaly|mild", "finding|present|pulmonary edema"]),
    ],
)
def test_coordinated_findings_share_a_modifier(shipped_annotator: Annotator, text: str,
                                               expected: list[str]) -> None:
    assert patterns(shipped_annotator, text) == expected


def test_plural_sites_are_bilateral(shipped_annotator: Annotator) -> None:
    assert patterns(shipped_annotator, "Atelectasis in the bases.") == [
        "finding|present|atelectasis|bilateral|base"
    ]
    assert patterns(shipped_annotator, "Granuloma in the left lower lung zone.") == [
        "finding|present|granuloma|left|lower zone"
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mildly flattened posterior diaphragm.",
         ["finding|present|flattened diaphragm|posterior|mild"]),
        ("Irregularity of the 7th posterior right rib.",
         ["finding|present|deformity|right|posterior|rib"]),
        ("Mild prominence of the right paratracheal soft tissues.",
         ["finding|present|widened mediastinum|right|paratracheal|mild"]),
        ("Calcified 5 mm right midlung granuloma.",
         ["finding|present|calcified granuloma|right|mid zone"]),
    ],
)
def test_terms_match_across_inner_modifier_words(shipped_annotator: Annotator, text: str,
                                                expected: list[str]) -> None:
    """Side, severity, time and location words, ordinals and sizes may stand inside a term;
    the modifier words become the finding's modifiers."""
    assert patterns(shipped_annotator, text) == expected


def test_inner_words_leave_plain_matches_alone(shipped_annotator: Annotator) -> None:
    """Modifier words before a term stay modifiers; the term's own words match as before."""
    assert patterns(shipped_annotator, "Small left pleural effusion.") == [
        "finding|present|pleural effusion|left|small"
    ]
    assert patterns(shipped_annotator, "No new right lower lobe pneumonia.") == [
        "disease|absent|pneumonia|right|lower lobe|new"
    ]
