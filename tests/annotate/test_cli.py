"""The annotate, explain and lexicon commands, through the Typer app and the entry point."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from clinsearch.cli import app, main

runner = CliRunner()


def test_annotate_writes_findings(tmp_path: Path, mini_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text(
        json.dumps({"id": "r1", "text": "No pneumothorax. Right lower lobe pneumonia."})
        + "\n\n"
        + json.dumps({"id": 2, "text": "No cyanosis or EDEMA.", "targets": ["cyanosis"]})
        + "\n",
        encoding="utf-8",
    )
    out = tmp_path / "out.jsonl"
    args = ["annotate", "--input", str(src), "--output", str(out), "--lexicon", str(mini_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == ["r1", "2"]
    assert [f["pattern"] for f in rows[0]["findings"]] == [
        "finding|absent|pneumothorax",
        "disease|present|pneumonia|right|lower lobe",
    ]
    first = rows[0]["findings"][0]
    assert set(first) == {
        "concept",
        "type",
        "text",
        "start",
        "end",
        "polarity",
        "context",
        "modifiers",
        "pattern",
        "trigger",
    }
    assert first["trigger"] == {"rule": "no", "category": "NEGATED_EXISTENCE", "text": "No",
                                "start": 0, "end": 2}
    assert rows[0]["findings"][1]["trigger"] is None
    assert rows[0]["findings"][1]["modifiers"][0] == {
        "category": "laterality",
        "value": "right",
        "text": "Right",
        "start": 17,
        "end": 22,
    }
    assert [(f["concept"], f["polarity"]) for f in rows[1]["findings"]] == [
        ("cyanosis", "absent"),
        ("edema", "absent"),
    ]


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"id": "2"}', "text"),
        ('{"text": "x"}', "id"),
        ('{"id": "2", "text": "x", "targets": "y"}', "targets"),
    ],
)
def test_annotate_bad_line_names_line_and_field(
    tmp_path: Path, mini_path: Path, line: str, field: str
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "1", "text": "No effusion."}\n' + line + "\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    args = ["annotate", "--input", str(src), "--output", str(out), "--lexicon", str(mini_path)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert f"in.jsonl:2: field '{field}'" in " ".join(result.stderr.split())
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [src]  # no temporary left behind


def test_entry_point_reports_user_errors_without_traceback(
    tmp_path: Path, mini_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("{not json\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    argv = ["clinsearch", "annotate", "--input", str(src), "--output", str(out)]
    monkeypatch.setattr(sys, "argv", [*argv, "--lexicon", str(mini_path)])
    with pytest.raises(SystemExit) as info:
        main()
    assert info.value.code == 2
    stderr = " ".join(capsys.readouterr().err.split())
    assert "in.jsonl:1: not valid JSON" in stderr
    assert "Traceback" not in stderr
    assert not out.exists()


def test_annotate_missing_input_or_output_folder(tmp_path: Path, mini_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text('{"id": "1", "text": "No effusion."}\n', encoding="utf-8")
    for args, words in [
        (["--input", str(tmp_path / "nope.jsonl"), "--output", str(tmp_path / "o.jsonl")],
         "no such file or directory"),
        (["--input", str(src), "--output", str(tmp_path / "no" / "o.jsonl")],
         "does not exist"),
    ]:  # fmt: skip
        result = runner.invoke(app, ["annotate", *args, "--lexicon", str(mini_path)])
        assert result.exit_code == 2
        assert words in result.stderr


def test_explain_marks_findings(mini_path: Path) -> None:
    result = runner.invoke(
        app, ["explain", "Small left effusion, no pneumothorax.", "--lexicon", str(mini_path)]
    )
    assert result.exit_code == 0, result.output
    assert "finding|present|pleural effusion|left|small" in result.output
    assert "finding|absent|pneumothorax" in result.output


@pytest.mark.parametrize(
    ("sentence", "pattern", "not_there"),
    [
        ("No hydronephrosis.", "finding|absent|hydronephrosis", None),
        ("Urinary tract infection.", "disease|present|urinary tract infection", "pneumonia"),
        ("The heart is not enlarged.", "finding|absent|cardiomegaly", "|present|cardiomegaly"),
    ],
)
def test_explain_reads_the_whole_department(sentence: str, pattern: str,
                                            not_there: str | None) -> None:
    """The shipped lexicon: kidneys, organ-qualified infections, anatomy with a state."""
    result = runner.invoke(app, ["explain", sentence])
    assert result.exit_code == 0, result.output
    assert pattern in result.output
    assert not_there is None or not_there not in result.output


def test_lexicon_stats_and_lookup(mini_path: Path) -> None:
    stats = runner.invoke(app, ["lexicon", "stats", "--lexicon", str(mini_path)])
    assert stats.exit_code == 0
    assert "concepts" in stats.output and "14" in stats.output
    found = runner.invoke(
        app, ["lexicon", "lookup", "pleural effusions", "--lexicon", str(mini_path)]
    )
    assert found.exit_code == 0
    assert "concept pleural_effusion" in found.output
    missing = runner.invoke(app, ["lexicon", "lookup", "zebra", "--lexicon", str(mini_path)])
    assert missing.exit_code == 1


def test_lexicon_import_command(tmp_path: Path, mini_path: Path) -> None:
    src = tmp_path / "mine.csv"
    src.write_text("concept,term\nhiatal hernia,hiatus hernia\n", encoding="utf-8")
    out = tmp_path / "merged.yaml"
    args = ["lexicon", "import", str(src), "--format", "csv", "--out", str(out)]
    result = runner.invoke(app, [*args, "--lexicon", str(mini_path)])
    assert result.exit_code == 0, result.output
    merged = runner.invoke(app, ["lexicon", "lookup", "hiatus hernias", "--lexicon", str(out)])
    assert "concept hiatal_hernia" in merged.output
    replaced = tmp_path / "replaced.yaml"
    args = ["lexicon", "import", str(src), "--format", "csv", "--out", str(replaced), "--replace"]
    runner.invoke(app, [*args, "--lexicon", str(mini_path)])
    gone = runner.invoke(app, ["lexicon", "lookup", "pneumonia", "--lexicon", str(replaced)])
    assert gone.exit_code == 1


def test_explain_report_shows_the_report_level_reading_and_its_trigger() -> None:
    """Issue 38: with --report the text is read as an index reads a report, and a reading the
    whole report changes carries its rule and the other sentence's words."""
    text = ("FINDINGS: There is pneumothorax. Patchy right lower lobe opacity, representing"
            " with pneumonia. Aspiration or edema are also possible.\n"
            "IMPRESSION: No acute cardiopulmonary disease.")
    result = runner.invoke(app, ["explain", "--report", "--format", "json", text])
    assert result.exit_code == 0, result.output
    found = {f["concept"]: f for f in json.loads(result.output)["findings"]}
    assert found["pneumothorax"]["polarity"] == "uncertain"
    assert found["pneumothorax"]["trigger"]["rule"] == "impression says nothing acute"
    trigger = found["pneumonia"]["trigger"]
    assert (found["pneumonia"]["polarity"], trigger["rule"], trigger["category"]) == (
        "uncertain", "differential in the next sentence", "DIFFERENTIAL")
    assert text[trigger["start"]:trigger["end"]] == "also possible"
    assert found["opacity"]["polarity"] == "present"
    # one sentence at a time, neither reading is there
    alone = runner.invoke(app, ["explain", "--format", "json", text])
    assert {f["concept"]: f["polarity"] for f in json.loads(alone.output)["findings"]}[
        "pneumothorax"] == "present"


def test_annotate_report_gives_each_line_the_report_level_reading(tmp_path: Path) -> None:
    """Issue 38: ``annotate --report`` reads each line as explain --report does, so a batch of
    reports gets the report-level rules and their triggers; targets are refused there."""
    text = ("FINDINGS: There is pneumothorax. Patchy right lower lobe opacity, representing"
            " with pneumonia. Aspiration or edema are also possible.\n"
            "IMPRESSION: No acute cardiopulmonary disease.")
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    src.write_text(json.dumps({"id": "r1", "text": text}) + "\n", encoding="utf-8")
    args = ["annotate", "--report", "--input", str(src), "--output", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    found = {f["concept"]: f for f in json.loads(out.read_text(encoding="utf-8"))["findings"]}
    explained = runner.invoke(app, ["explain", "--report", "--format", "json", text])
    assert list(found.values()) == json.loads(explained.output)["findings"]
    assert found["pneumothorax"]["trigger"]["rule"] == "impression says nothing acute"
    assert text[found["pneumonia"]["trigger"]["start"]:found["pneumonia"]["trigger"][
        "end"]] == "also possible"
    src.write_text(json.dumps({"id": "r2", "text": text, "targets": ["opacity"]}) + "\n",
                   encoding="utf-8")
    refused = runner.invoke(app, [*args, "--force"])
    assert refused.exit_code == 2
    assert "in.jsonl:1: field 'targets'" in " ".join(refused.stderr.split())
    assert found == {f["concept"]: f for f in json.loads(out.read_text(encoding="utf-8"))[
        "findings"]}  # the earlier output is left as it was
