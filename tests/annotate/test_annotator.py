"""Annotator: cues, scope, pseudo-negation, lists, context flags, modifiers, match tolerance."""

from __future__ import annotations

import pytest

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.finding import Finding


def by_concept(findings: list[Finding]) -> dict[str, Finding]:
    return {f.concept: f for f in findings}


def polarity(annotator: Annotator, text: str, concept: str) -> str:
    found = by_concept(annotator.annotate(text))
    assert concept in found, f"{concept} not found in {text!r}: {found}"
    return found[concept].polarity


@pytest.mark.parametrize(
    ("text", "concept", "expected"),
    [
        ("No pneumothorax.", "pneumothorax", "absent"),
        ("Clear lungs without effusion.", "pleural_effusion", "absent"),
        ("Negative for pneumonia.", "pneumonia", "absent"),
        ("Lungs are free of consolidation.", "consolidation", "absent"),
        ("The effusion has resolved.", "pleural_effusion", "absent"),
        ("Resolved pneumonia.", "pneumonia", "absent"),
        ("There is no evidence of pneumothorax.", "pneumothorax", "absent"),
        ("Pneumothorax is not seen.", "pneumothorax", "absent"),
        ("Findings may represent pneumonia.", "pneumonia", "uncertain"),
        ("Pneumonia cannot be excluded.", "pneumonia", "uncertain"),
        ("Opacity suggestive of pneumonia.", "pneumonia", "uncertain"),
        ("Possible small effusion.", "pleural_effusion", "uncertain"),
        ("Right lower lobe pneumonia.", "pneumonia", "present"),
    ],
)
def test_cues(annotator: Annotator, text: str, concept: str, expected: str) -> None:
    assert polarity(annotator, text, concept) == expected


def test_versus_makes_both_sides_uncertain(annotator: Annotator) -> None:
    found = by_concept(annotator.annotate("Atelectasis versus pneumonia."))
    assert found["atelectasis"].polarity == "uncertain"
    assert found["pneumonia"].polarity == "uncertain"


@pytest.mark.parametrize(
    "text",
    [
        "No change in the right pleural effusion.",
        "No increase in the pleural effusion.",
        "No significant interval change in the pleural effusion.",
    ],
)
def test_pseudo_negations_assert_nothing(annotator: Annotator, text: str) -> None:
    assert polarity(annotator, text, "pleural_effusion") == "present"


def test_not_only_is_pseudo(annotator: Annotator) -> None:
    assert polarity(annotator, "Not only pneumonia but also effusion.", "pneumonia") == "present"


def test_coordinated_list_negates_every_item(annotator: Annotator) -> None:
    findings = annotator.annotate("No pneumothorax, effusion, or consolidation.")
    assert [(f.concept, f.polarity) for f in findings] == [
        ("pneumothorax", "absent"),
        ("pleural_effusion", "absent"),
        ("consolidation", "absent"),
    ]


@pytest.mark.parametrize(
    "text",
    [
        "No pneumothorax but there is a large left effusion.",
        "No pneumothorax; large left effusion.",
        "No pneumothorax. Large left effusion.",
        "No pneumothorax, however a large left effusion is present.",
    ],
)
def test_scope_ends_at_terminators(annotator: Annotator, text: str) -> None:
    found = by_concept(annotator.annotate(text))
    assert found["pneumothorax"].polarity == "absent"
    assert found["pleural_effusion"].polarity == "present"


@pytest.mark.parametrize(
    ("text", "concept", "polarity_", "context"),
    [
        ("Evaluate for pneumonia.", "pneumonia", "uncertain", ("hypothetical",)),
        ("Rule out pneumothorax.", "pneumothorax", "uncertain", ("hypothetical",)),
        ("History of pneumonia.", "pneumonia", "present", ("historical",)),
        (
            "If pneumothorax develops, repeat the film.",
            "pneumothorax",
            "present",
            ("hypothetical",),
        ),
    ],
)
def test_context_flags(
    annotator: Annotator, text: str, concept: str, polarity_: str, context: tuple[str, ...]
) -> None:
    f = by_concept(annotator.annotate(text))[concept]
    assert (f.polarity, f.context) == (polarity_, context)


@pytest.mark.parametrize(
    ("text", "concept", "pattern"),
    [
        ("Right lower lobe pneumonia.", "pneumonia", "disease|present|pneumonia|right|lower lobe"),
        (
            "Pneumonia in the right lower lobe.",
            "pneumonia",
            "disease|present|pneumonia|right|lower lobe",
        ),
        ("RLL opacity.", "opacity", "finding|present|opacity|right|lower lobe"),
        ("Bibasilar atelectasis.", "atelectasis", "finding|present|atelectasis|bilateral|base"),
        (
            "Small bilateral pleural effusions.",
            "pleural_effusion",
            "finding|present|pleural effusion|bilateral|small",
        ),
        (
            "No new right-sided effusion.",
            "pleural_effusion",
            "finding|absent|pleural effusion|right|new",
        ),
    ],
)
def test_modifiers_and_compounds(
    annotator: Annotator, text: str, concept: str, pattern: str
) -> None:
    assert by_concept(annotator.annotate(text))[concept].pattern == pattern


def test_modifier_inside_a_concepts_words(annotator: Annotator) -> None:
    assert annotator.annotate("Heart is mildly enlarged.")[0].pattern == (
        "finding|present|cardiomegaly|mild"
    )
    # "pleural" is a location value, but here it is part of the concept's own name
    assert annotator.annotate("Small pleural effusion.")[0].pattern == (
        "finding|present|pleural effusion|small"
    )


def test_modifiers_attach_to_the_nearest_finding_in_their_clause(annotator: Annotator) -> None:
    found = by_concept(annotator.annotate("Mild cardiomegaly and small left effusion."))
    assert found["cardiomegaly"].pattern == "finding|present|cardiomegaly|mild"
    assert found["pleural_effusion"].pattern == "finding|present|pleural effusion|left|small"


def test_modifier_offsets_point_into_the_text(annotator: Annotator) -> None:
    text = "Stable  RLL   opacity."
    f = annotator.annotate(text)[0]
    assert all(text[m.start : m.end] == m.text for m in f.modifiers)
    assert {m.text for m in f.modifiers} == {"Stable", "RLL"}


@pytest.mark.parametrize(
    ("text", "concept", "surface"),
    [
        ("There are no XXXX of a pleural effusion.", "pleural_effusion", "pleural effusion"),
        (
            "Costophrenic XXXX blunting on the left.",
            "costophrenic_blunting",
            "Costophrenic XXXX blunting",
        ),
        ("Pleural XXXX effusion.", "pleural_effusion", "Pleural XXXX effusion"),
        ("Bilateral pleural effusions.", "pleural_effusion", "pleural effusions"),
        ("Bilateral pneumothoraces.", "pneumothorax", "pneumothoraces"),
        ("Patchy air-space disease.", "opacity", "air-space disease"),
        ("Patchy air space disease.", "opacity", "air space disease"),
        ("Patchy airspace disease.", "opacity", "airspace disease"),
        ("Multiple calcified granulomas.", "granuloma", "calcified granulomas"),
        ("Blunted costophrenic angles.", "costophrenic_blunting", "Blunted costophrenic angles"),
        ("PLEURAL EFFUSION.", "pleural_effusion", "PLEURAL EFFUSION"),
    ],
)
def test_matching_tolerance(annotator: Annotator, text: str, concept: str, surface: str) -> None:
    f = by_concept(annotator.annotate(text))[concept]
    assert f.text == surface
    assert text[f.start : f.end] == surface


def test_longest_match_wins(annotator: Annotator) -> None:
    findings = annotator.annotate("Focal airspace consolidation.")
    assert [(f.concept, f.text) for f in findings] == [("consolidation", "airspace consolidation")]


def test_deid_token_does_not_start_or_end_a_match(annotator: Annotator) -> None:
    assert [f.text for f in annotator.annotate("XXXX effusion XXXX")] == ["effusion"]
    assert [f.text for f in annotator.annotate("Pleural XXXX.")] == []


def test_abbreviations_are_case_sensitive(annotator: Annotator) -> None:
    assert [f.concept for f in annotator.annotate("Evaluate for PNA.")] == ["pneumonia"]
    assert annotator.annotate("the pna level") == []
    assert [f.concept for f in annotator.annotate("ETT in place.")] == ["endotracheal_tube"]


def test_cue_and_modifier_words_are_not_findings(annotator: Annotator) -> None:
    concepts = [f.concept for f in annotator.annotate("Pneumonia cannot be excluded.")]
    assert concepts == ["pneumonia"]
    assert [f.concept for f in annotator.annotate("Heart is enlarged.")] == ["cardiomegaly"]


def test_offsets_survive_whitespace_runs(annotator: Annotator) -> None:
    text = "No   pneumothorax\nor  pleural\n\neffusion."
    findings = annotator.annotate(text)
    assert [text[f.start : f.end] for f in findings] == ["pneumothorax", "pleural\n\neffusion"]
    assert all(f.polarity == "absent" for f in findings)


def test_targets_are_found_and_win_overlaps(annotator: Annotator) -> None:
    findings = annotator.annotate(
        "No peripheral cyanosis or pleural EFFUSION.", targets=["effusion"]
    )
    targets = [f for f in findings if f.type == "target"]
    assert [(f.concept, f.text, f.polarity) for f in targets] == [
        ("effusion", "EFFUSION", "absent")
    ]
    assert "pleural_effusion" not in {f.concept for f in findings}


def test_cue_inside_a_target_phrase_does_not_modify_it(annotator: Annotator) -> None:
    text = "The oral mucosa is moist with no erythema."
    [f] = annotator.annotate(text, targets=["oral mucosa is moist with no erythema"])
    assert f.polarity == "present"


def test_a_long_condition_phrase_is_a_target_like_any_other(annotator: Annotator) -> None:
    """Condition phrases of real notes run to 20 words and more (the NegEx test set's do):
    their spelling, plural and de-identification variants stay within the bound."""
    phrase = ("pain in the left lower extremity with swelling of the calf and redness over the"
              " medial aspect of the knee")
    [f] = [f for f in annotator.annotate(f"She denies {phrase}.", targets=[phrase])
           if f.type == "target"]
    assert (f.text, f.polarity) == (phrase, "absent")


def test_annotate_many_matches_annotate(annotator: Annotator) -> None:
    texts = ["No pneumothorax.", "Right lower lobe pneumonia.", "", "Evaluate for PNA."] * 3
    targets = [(), (), (), ("evaluate",)] * 3
    assert list(annotator.annotate_many(texts, targets, batch_size=5)) == [
        annotator.annotate(t, tg) for t, tg in zip(texts, targets, strict=True)
    ]


def test_annotate_many_needs_one_target_list_per_text(annotator: Annotator) -> None:
    with pytest.raises(ValueError):
        list(annotator.annotate_many(["No effusion.", "No pneumothorax."], [("effusion",)]))
