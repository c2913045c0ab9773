"""Segmentation edge cases of radiology text; every sentence is checked against its offsets."""

from __future__ import annotations

import inspect

import pytest

from clinsearch.corpus.model import Report, SegmentedReport
from clinsearch.corpus.segment import Segmenter


@pytest.fixture(scope="module")
def segmenter() -> Segmenter:
    return Segmenter()


def _segment(segmenter: Segmenter, text: str) -> SegmentedReport:
    segmented = segmenter.segment(Report("r", text))
    for sentence in segmented.sentences:
        assert text[sentence.start : sentence.end] == sentence.text
        assert sentence.text == sentence.text.strip() and sentence.text
    for section in segmented.sections:
        assert text[section.start : section.end] == text[section.start : section.end].strip()
    return segmented


def _texts(segmenter: Segmenter, text: str) -> list[str]:
    return [s.text for s in _segment(segmenter, text).sentences]


def test_sections_are_named_and_sentences_exclude_headings(segmenter: Segmenter) -> None:
    text = (
        "Portable chest.\n\nHISTORY/INDICATION: Cough.\nCOMPARISON: None.\n"
        "TECHNIQUE: PA and lateral.\nFINDINGS: Heart normal. Lungs clear.\nIMPRESSION: Normal."
    )
    segmented = _segment(segmenter, text)
    assert [s.name for s in segmented.sections] == [
        "",
        "indication",
        "comparison",
        "technique",
        "findings",
        "impression",
    ]
    assert text[segmented.sections[4].start :].startswith("FINDINGS:")
    assert [(s.section, s.text) for s in segmented.sentences] == [
        ("", "Portable chest."),
        ("indication", "Cough."),
        ("comparison", "None."),
        ("technique", "PA and lateral."),
        ("findings", "Heart normal."),
        ("findings", "Lungs clear."),
        ("impression", "Normal."),
    ]
    assert [s.id for s in segmented.sentences][:2] == ["r#0", "r#1"]
    assert [s.index for s in segmented.sentences] == list(range(7))


def test_inline_title_case_headings(segmenter: Segmenter) -> None:
    text = "IMPRESSION: Exam: CHEST 2V Comparison: CT chest XXXX History: Dyspnea FINDINGS: Clear."
    segmented = _segment(segmenter, text)
    assert [s.name for s in segmented.sections] == [
        "impression",
        "exam",
        "comparison",
        "indication",
        "findings",
    ]
    assert [s.text for s in segmented.sentences] == [
        "CHEST 2V",
        "CT chest XXXX",
        "Dyspnea",
        "Clear.",
    ]


def test_heading_words_inside_sentences_are_not_headings(segmenter: Segmenter) -> None:
    segmented = _segment(segmenter, "No comparison: prior films unavailable. Findings are stable.")
    assert [s.name for s in segmented.sections] == [""]
    assert len(segmented.sentences) == 2


def test_numbered_impressions(segmenter: Segmenter) -> None:
    text = "IMPRESSION: 1. No acute disease. 2. Stable cardiomegaly. 3. Small left effusion."
    assert _texts(segmenter, text) == [
        "1. No acute disease.",
        "2. Stable cardiomegaly.",
        "3. Small left effusion.",
    ]


def test_numbered_items_without_punctuation(segmenter: Segmenter) -> None:
    text = "IMPRESSION:\n1. No pneumothorax 2. ETT tip 4 cm above the carina 3. Stable"
    assert _texts(segmenter, text) == [
        "1. No pneumothorax",
        "2. ETT tip 4 cm above the carina",
        "3. Stable",
    ]


def test_numbers_that_are_not_items(segmenter: Segmenter) -> None:
    text = "Fractures of ribs 5 and 6. Nodule of 2.5 cm in segment 6 of the left lobe. No change."
    assert _texts(segmenter, text) == [
        "Fractures of ribs 5 and 6.",
        "Nodule of 2.5 cm in segment 6 of the left lobe.",
        "No change.",
    ]


def test_deidentification_tokens(segmenter: Segmenter) -> None:
    text = "XXXX deformity of the spine. XXXX XXXX are intact. Heart size normal on XXXX, XXXX."
    assert _texts(segmenter, text) == [
        "XXXX deformity of the spine.",
        "XXXX XXXX are intact.",
        "Heart size normal on XXXX, XXXX.",
    ]


def test_abbreviations_do_not_split(segmenter: Segmenter) -> None:
    text = (
        "Findings discussed with Dr. Smith at 9:30 a.m. on the ward. "
        "Atelectasis vs. Pneumonia, approx. 3 cm, e.g. Lingula. Mr. Jones agreed."
    )
    assert _texts(segmenter, text) == [
        "Findings discussed with Dr. Smith at 9:30 a.m. on the ward.",
        "Atelectasis vs. Pneumonia, approx. 3 cm, e.g. Lingula.",
        "Mr. Jones agreed.",
    ]


def test_bulleted_and_dashed_lists(segmenter: Segmenter) -> None:
    text = (
        "Lines and tubes:\n- ETT 5 cm above carina\n- NG tube in stomach\n"
        "* Right PICC at cavoatrial junction\n• Left chest tube"
    )
    assert _texts(segmenter, text) == [
        "Lines and tubes:",
        "- ETT 5 cm above carina",
        "- NG tube in stomach",
        "* Right PICC at cavoatrial junction",
        "• Left chest tube",
    ]


def test_newlines_break_sentences_without_punctuation(segmenter: Segmenter) -> None:
    text = "FINDINGS:\nHeart size normal\nNo pleural effusion\n\nIMPRESSION:\nNo acute disease"
    segmented = _segment(segmenter, text)
    assert [(s.section, s.text) for s in segmented.sentences] == [
        ("findings", "Heart size normal"),
        ("findings", "No pleural effusion"),
        ("impression", "No acute disease"),
    ]


def test_hard_wrapped_lines_are_joined(segmenter: Segmenter) -> None:
    text = "Small left pleural effusion with adjacent\nbasilar atelectasis. No pneumothorax."
    assert _texts(segmenter, text) == [
        "Small left pleural effusion with adjacent\nbasilar atelectasis.",
        "No pneumothorax.",
    ]


def test_whitespace_and_stray_punctuation(segmenter: Segmenter) -> None:
    text = (
        "   \n  Mediastinal contours normal..  Minimal atelectasis .  \n . \n  Otherwise clear!  "
    )
    assert _texts(segmenter, text) == [
        "Mediastinal contours normal..",
        "Minimal atelectasis .",
        "Otherwise clear!",
    ]


def test_lower_case_after_period_does_not_split(segmenter: Segmenter) -> None:
    assert _texts(segmenter, "Possible infiltrate vs. atelectasis. No effusion? Clear.") == [
        "Possible infiltrate vs. atelectasis.",
        "No effusion?",
        "Clear.",
    ]


def test_empty_and_blank_reports(segmenter: Segmenter) -> None:
    for text in ("", "   \n\t "):
        segmented = _segment(segmenter, text)
        assert segmented.sections == () and segmented.sentences == ()
    only_heading = _segment(segmenter, "FINDINGS:")
    assert [s.name for s in only_heading.sections] == ["findings"] and only_heading.sentences == ()


def test_segment_many_streams(segmenter: Segmenter) -> None:
    reports = (Report(str(i), f"Sentence {i}. Another.") for i in range(3))
    stream = segmenter.segment_many(reports)
    assert inspect.isgenerator(stream)
    assert [len(s.sentences) for s in stream] == [2, 2, 2]


def test_missing_space_after_period(segmenter: Segmenter) -> None:
    text = (
        "Clear right lung XXXX.In the left lobe a 1.9 x 1.8 cm density."
        "Seen by Dr.Smith at the U.S.Army base."
    )
    assert _texts(segmenter, text) == [
        "Clear right lung XXXX.",
        "In the left lobe a 1.9 x 1.8 cm density.",
        "Seen by Dr.Smith at the U.S.Army base.",
    ]


def test_hard_wrapped_note_with_line_start_headings(segmenter: Segmenter) -> None:
    text = (
        " CHEST (PA & LAT)\n Reason: eval for infiltrate\n ____________________\n"
        " UNDERLYING MEDICAL CONDITION:\n  65 year old man with fever\n"
        " PORTABLE VIEW: single frontal image\n"
        " FINDINGS:  The heart is mildly enlarged.  New opacity in the right\n"
        " lower lobe, concerning for pneumonia.\n\n IMPRESSION:\n 1.  Right lower lobe pneumonia.\n"
    )
    segmented = _segment(segmenter, text)
    assert [s.name for s in segmented.sections] == [
        "",
        "indication",
        "indication",
        "portable view",
        "findings",
        "impression",
    ]
    assert [s.text for s in segmented.sentences] == [
        "CHEST (PA & LAT)",
        "eval for infiltrate",
        "65 year old man with fever",
        "single frontal image",
        "The heart is mildly enlarged.",
        "New opacity in the right\n lower lobe, concerning for pneumonia.",
        "1.  Right lower lobe pneumonia.",
    ]


def test_segmented_report_survives_pickling(segmenter: Segmenter) -> None:
    """Workers send segmented reports back as field tuples; they arrive equal, fields intact."""
    import pickle

    report = Report("r7", "FINDINGS: Heart is normal. No effusion.\nIMPRESSION: Normal.",
                    patient_id="p", type="chest", date="2020-01-02", metadata={"site": "A"},
                    source="f.jsonl:3")
    segmented = segmenter.segment(report)
    assert pickle.loads(pickle.dumps(segmented)) == segmented
