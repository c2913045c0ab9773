"""ConText is built for the rules a text may match; results are the full ConText's.

``RuleCues`` names the rules that may match a text (a necessary condition), so a text must come
out of the rule-less ConText (no candidate) or of the ConText of its candidates alone exactly
as out of the full one.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.context_cues import WORD, RuleCues
from clinsearch.annotate.context_rules import (
    cached_rule_specs,
    context_rule_specs,
    cue_words,
    rule_cues,
)
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.medspacy_pipeline import LazyConText
from clinsearch.corpus.sample import sample_reports_path

QUERIES = ("right lower lobe pneumonia", "pleural effusion", "enlarged heart", "cardiomegaly",
           "spine osteopenia", "left basilar opacity", "tortuous aorta", "COPD")


def _sample_sentences() -> list[str]:
    """The bundled sample's report text, cut at line ends and full stops."""
    with sample_reports_path().open(encoding="utf-8") as lines:
        texts = [json.loads(line)["text"] for line in lines if line.strip()]
    parts = (p.strip() for t in texts for p in re.split(r"\n|(?<=\.)\s+", t))
    return list(dict.fromkeys(p for p in parts if p))


def test_phrase_cues_follow_tokens_not_characters() -> None:
    cues = RuleCues.of([{"literal": "no", "category": "NEGATED_EXISTENCE"},
                        {"literal": "rule  out", "category": "POSSIBLE_EXISTENCE"},
                        {"literal": "x-ray", "category": "INDICATION"},
                        {"literal": "No", "category": "PSEUDO"}])
    assert cues.candidates(["no", "effusion"]) == (0, 3)  # both rules spelling "no"
    assert cues.candidates(["pneumonia", "normal"]) == ()  # "no" only inside words
    assert cues.candidates(["to", "rule", "out", "mass"]) == (1,)  # whitespace never counts
    assert cues.candidates(["x", "-", "ray", "no"]) == (0, 2, 3)
    assert cues.candidates(["ruled", "out"]) == ()


def test_pattern_cues_need_every_required_word() -> None:
    pattern = [{"LOWER": {"IN": ["is", "are"]}, "OP": "?"}, {"LOWER": "within"},
               {"LOWER": {"IN": ["limits", "range"]}}, {"IS_SENT_START": True}]
    cues = RuleCues.of([{"literal": "no", "category": "NEGATED_EXISTENCE"},
                        {"literal": "wnl", "category": "WITHIN_NORMAL", "pattern": pattern}])
    assert cues.candidates(["heart", "within", "normal", "limits"]) == (1,)
    assert cues.candidates(["heart", "within", "normal", "size"]) == ()
    assert cues.candidates(["heart", "is", "normal"]) == ()


def test_rules_without_a_bound_match_every_text() -> None:
    regex = RuleCues.of([{"literal": "r/o", "category": "POSSIBLE_EXISTENCE", "pattern": "r/o"}])
    accent = RuleCues.of([{"literal": "no", "category": "NEGATED_EXISTENCE"},
                          {"literal": "négatif", "category": "NEGATED_EXISTENCE"}])
    assert regex.candidates(["anything"]) == (0,) and accent.candidates(["anything"]) == (1,)


@pytest.mark.parametrize("radiology", [True, False])
def test_cached_rules_and_cues_are_the_rules_own(radiology: bool, tmp_path: Path) -> None:
    specs = context_rule_specs(radiology)
    made = RuleCues.of(specs)
    assert rule_cues(radiology, tmp_path) == made  # computed and stored, the rules too
    assert rule_cues(radiology, tmp_path) == made  # loaded
    assert cached_rule_specs(radiology, tmp_path) == specs  # loaded
    assert len(list(tmp_path.glob("cues-*.json"))) == len(list(tmp_path.glob("rules-*"))) == 1
    (stored,) = tmp_path.glob("rules-*")
    stored.write_text(stored.read_text().replace('"literal"', '"literal_"'))  # damaged
    assert cached_rule_specs(radiology, tmp_path) == specs


@pytest.mark.parametrize("radiology", [True, False])
def test_cached_cue_words_are_the_words_of_the_rules_literals(radiology: bool,
                                                              tmp_path: Path) -> None:
    words = frozenset(w for spec in context_rule_specs(radiology)
                      for w in WORD.findall(str(spec["literal"]).lower()))
    assert {"no", "without", "possible"} <= words
    assert cue_words(radiology, tmp_path) == words  # computed and stored
    (stored,) = tmp_path.glob("cue-words-*")
    assert cue_words(radiology, tmp_path) == words  # loaded
    stored.write_text(stored.read_text().replace('"no"', "1"))  # damaged: recomputed
    assert cue_words(radiology, tmp_path) == words


def test_cue_data_of_the_wrong_shape_is_refused() -> None:
    good = RuleCues.of(context_rule_specs(False)).to_data()
    assert RuleCues.from_data(good).to_data() == good
    for bad in ({**good, "patterns": [["no"]]}, {**good, "always": 1}, {},
                {**good, "always": [True]}, {**good, "phrases": {"no": ["1"]}},
                {**good, "longest": 2}):  # would stop the search before longer phrases
        with pytest.raises(ValueError):
            RuleCues.from_data(bad)


@pytest.mark.parametrize("radiology_rules", [True, False])
def test_texts_without_cues_get_the_full_contexts_findings(radiology_rules: bool) -> None:
    """A fresh annotator gives cue-free texts the findings it gives once ConText is built."""
    annotator = Annotator(Lexicon.load(), radiology_rules=radiology_rules)
    cues = annotator.context._cues
    texts = [*QUERIES, *_sample_sentences()]
    quiet = [t for t in texts if not cues.candidates(
        [tok.lower_ for tok in annotator.nlp.make_doc(t)])]
    assert len(quiet) > 50  # the test covers many texts, queries among them
    assert set(QUERIES) <= set(quiet)
    before = list(annotator.annotate_many(quiet))
    assert not annotator.context.built
    assert "specs" not in vars(annotator.context)  # the rules were not even read
    assert annotator.annotate("No pneumothorax.")[0].polarity == "absent"
    assert annotator.context.subsets == 1 and not annotator.context.built
    annotator.context = LazyConText(annotator.nlp, radiology_rules, subset_rules=0)
    assert annotator.annotate("No pneumothorax.")[0].polarity == "absent"
    assert annotator.context.built
    assert list(annotator.annotate_many(quiet)) == before
    assert any(f.modifiers for findings in before for f in findings)  # not trivially empty


TRICKY = ("No pneumothorax but small left effusion.", "Clear of infiltrate, however mild edema.",
          "Patient denies chest pain although cough is present.", "No effusion.",
          "Possible pneumonia versus atelectasis.", "Heart within normal limits.",
          "Lungs are clear. No focal consolidation, though there is mild scarring.",
          "Negative for pneumothorax; no evidence of effusion or edema.",
          "Mother had breast cancer.", "History of tuberculosis, no active disease.")


def _contexts_agree(texts: list[str], radiology_rules: bool = True) -> int:
    """Annotate ``texts`` with a ConText of each text's candidate rules and with the full one;
    both give the same findings. Returns how many candidate ConTexts were built."""
    lexicon = Lexicon.load()
    by_subset = Annotator(lexicon, radiology_rules=radiology_rules)
    by_subset.context = LazyConText(by_subset.nlp, radiology_rules, subset_rules=10**6,
                                    subsets=10**6)
    full = Annotator(lexicon, radiology_rules=radiology_rules)
    full.context = LazyConText(full.nlp, radiology_rules, subset_rules=0)
    assert list(by_subset.annotate_many(texts)) == list(full.annotate_many(texts))
    assert full.context.built and not by_subset.context.built
    return by_subset.context.subsets


@pytest.mark.parametrize("radiology_rules", [True, False])
def test_a_context_of_the_candidate_rules_gives_the_full_contexts_findings(
        radiology_rules: bool) -> None:
    texts = [*TRICKY, *QUERIES, *_sample_sentences()]
    assert _contexts_agree(texts, radiology_rules) >= 20


def test_the_negex_sentences_get_the_full_contexts_findings(negex_file: Path) -> None:
    with negex_file.open(encoding="utf-8") as rows:
        sentences = [line.split("\t")[2] for line in list(rows)[1:] if line.count("\t") >= 2]
    assert len(sentences) > 2000
    assert _contexts_agree(sentences) > 300


def test_rules_numbered_otherwise_by_medspacy_fall_back_to_the_full_context(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """If a medspaCy gave a candidate ConText's rules other ids (their order breaks ties), the
    full ConText is built instead."""
    from medspacy.common.medspacy_matcher import MedspacyMatcher

    real_add = MedspacyMatcher.add

    def renumbered(matcher: MedspacyMatcher, rules: list) -> None:  # type: ignore[type-arg]
        matcher._MedspacyMatcher__rule_count = 0  # type: ignore[attr-defined]
        real_add(matcher, rules)

    monkeypatch.setattr(MedspacyMatcher, "add", renumbered)
    annotator = Annotator(Lexicon.load())
    assert annotator.annotate("No pneumothorax.")[0].polarity == "absent"
    assert annotator.context.built and annotator.context.subsets == 0
