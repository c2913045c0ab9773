"""Every reader on small files: field mapping, metadata, dates, sources and streaming."""

from __future__ import annotations

import inspect
import json
import tracemalloc
from pathlib import Path

from clinsearch.corpus.readers import FORMATS, format_options, read_reports

IU_HEADER = "uid,MeSH,Problems,image,indication,comparison,findings,impression\n"
MIMIC_HEADER = (
    "ROW_ID,SUBJECT_ID,HADM_ID,CHARTDATE,CHARTTIME,STORETIME,CATEGORY,DESCRIPTION,CGID,ISERROR,"
    "TEXT\n"
)


def test_formats_registered() -> None:
    assert set(FORMATS) == {"csv", "jsonl", "txt-dir", "iu-xray", "mimic-notes", "cmc2007",
                            "cmc2007-coded"}
    assert "text_columns" in format_options("csv")
    assert format_options("jsonl") == ()


def test_csv_maps_columns_and_keeps_the_rest_as_metadata(write) -> None:
    path = write(
        "r.csv",
        "rid,pat,enc,kind,when,body,site\n"
        "a1,p1,v1,CXR,2021-03-04,No effusion.,north\n"
        'a2,p1,v2,CT,2021-03-05,"Two lines,\nquoted.",south\n'
        "a3,p2,,CXR,2021-03-06 ,Clear lungs.,\n",
    )
    reports = list(
        read_reports(
            path,
            "csv",
            id_column="rid",
            text_columns="body",
            patient_column="pat",
            visit_column="enc",
            type_column="kind",
            date_column="when",
        )
    )
    assert [r.id for r in reports] == ["a1", "a2", "a3"]
    first, second, third = reports
    assert (first.patient_id, first.visit_id, first.type, first.date) == (
        "p1",
        "v1",
        "CXR",
        "2021-03-04",
    )
    assert first.metadata == {"site": "north"}
    assert second.text == "Two lines,\nquoted." and second.date == "2021-03-05"
    assert third.visit_id == "a3" and third.date == "2021-03-06" and third.metadata == {}
    assert [r.source for r in reports] == [f"{path}:2", f"{path}:3", f"{path}:5"]


def test_csv_joins_several_text_columns_under_headings(write) -> None:
    content = "id, findings ,impression\n1,Heart normal.,No acute disease.\n2,,Stable.\n"
    path = write("r.csv", content)  # header names are trimmed
    reports = list(read_reports(path, "csv", text_columns=["findings", "impression"]))
    assert reports[0].text == "FINDINGS: Heart normal.\nIMPRESSION: No acute disease."
    assert reports[1].text == "IMPRESSION: Stable."


def test_jsonl_reads_known_keys_and_metadata(write) -> None:
    rows = [
        {
            "id": "7",
            "text": "No pneumothorax.",
            "patient_id": "p",
            "visit_id": "v",
            "type": "CXR",
            "date": "2020-01-02T10:30:00",
            "site": "A",
            "score": 3,
        },
        {"id": "8", "text": "Clear."},
    ]
    path = write("r.jsonl", json.dumps(rows[0]) + "\n\n" + json.dumps(rows[1]) + "\n")
    first, second = read_reports(path, "jsonl")
    assert (first.id, first.patient_id, first.visit_id, first.type) == ("7", "p", "v", "CXR")
    assert first.date == "2020-01-02"
    assert first.metadata == {"site": "A", "score": "3"}
    assert second.source == f"{path}:3" and second.patient_id == "8"


def test_txt_dir_ids_are_relative_paths_without_extension(tmp_path: Path, write) -> None:
    write("corpus/b.txt", "Second.")
    write("corpus/a/one.txt", "FINDINGS: First.\n")
    write("corpus/notes.md", "not a report")
    write("corpus/.hidden.txt", "hidden")
    reports = list(read_reports(tmp_path / "corpus", "txt-dir"))
    assert [r.id for r in reports] == ["a/one", "b"]
    assert reports[0].text == "FINDINGS: First.\n"
    assert reports[0].source.endswith("one.txt:1")


def test_iu_xray_text_is_findings_and_impression_only(write) -> None:
    path = write(
        "iu.csv",
        IU_HEADER
        + "10,Cardiomegaly/mild,Cardiomegaly,PA and lateral,Cough,None.,"
        + "Heart is enlarged.,Cardiomegaly.\n"
        + "11,normal,normal,PA,Pain,XXXX,,No acute disease.\n",
    )
    first, second = read_reports(path, "iu-xray")
    assert first.id == "10"
    assert first.text == "FINDINGS: Heart is enlarged.\nIMPRESSION: Cardiomegaly."
    assert first.metadata == {
        "MeSH": "Cardiomegaly/mild",
        "Problems": "Cardiomegaly",
        "image": "PA and lateral",
        "indication": "Cough",
        "comparison": "None.",
    }
    assert first.type == "chest x-ray"
    assert second.text == "IMPRESSION: No acute disease."
    assert "normal" not in second.text and "Pain" not in second.text


def test_mimic_notes_mapping(write) -> None:
    path = write(
        "NOTEEVENTS.csv",
        MIMIC_HEADER
        + '174,22532,167853,2151-08-04,,,Radiology,CHEST (PA & LAT),,,"FINAL REPORT\n'
        + 'IMPRESSION: No acute process."\n'
        + "175,22532,,2151-09-01,2151-09-01 10:00:00,,Nursing,Note,1,,Stable overnight.\n",
    )
    first, second = read_reports(path, "mimic-notes")
    assert (first.id, first.patient_id, first.visit_id) == ("174", "22532", "167853")
    assert (first.date, first.type) == ("2151-08-04", "Radiology")
    assert first.text.startswith("FINAL REPORT\nIMPRESSION")
    assert first.metadata == {"DESCRIPTION": "CHEST (PA & LAT)"}
    assert second.visit_id == "175" and second.source == f"{path}:4"
    assert second.metadata["CHARTTIME"] == "2151-09-01 10:00:00"


def test_read_reports_is_a_lazy_generator(write) -> None:
    path = write("r.jsonl", '{"id": "1", "text": "Fine."}\n{"id": "1", "text": "Duplicate."}\n')
    stream = read_reports(path, "jsonl")
    assert inspect.isgenerator(stream)
    assert next(stream).id == "1"  # the bad second line is not read yet


def test_streaming_memory_does_not_grow_with_the_corpus(tmp_path: Path) -> None:
    path = tmp_path / "big.csv"
    filler = "No focal consolidation, pleural effusion or pneumothorax. " * 10
    with path.open("w") as out:
        out.write("id,text\n")
        for i in range(20_000):
            out.write(f"r{i},{filler}{i}\n")
    assert path.stat().st_size > 10_000_000
    tracemalloc.start()
    count = sum(1 for _ in read_reports(path, "csv"))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert count == 20_000
    assert peak < 4_000_000  # ids only (~1.5 MB), never the 11 MB of text
