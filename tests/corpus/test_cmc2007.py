"""The cmc2007 readers on small files in the challenge's XML format."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch.corpus.readers import ReadStats, read_reports
from clinsearch.corpus.segment import Segmenter
from clinsearch.errors import InputError

XML = """<?xml version='1.0' standalone='yes'?>
<docs>
  <doc id="97638202" type="RADIOLOGY_REPORT">
    <codes>
      <code origin="CMC_MAJORITY" type="ICD-9-CM">786.2</code>
      <code origin="CMC_MAJORITY" type="ICD-9-CM">486</code>
      <code origin="COMPANY1" type="ICD-9-CM">786.2</code>
    </codes>
    <texts>
      <text origin="CCHMC_RADIOLOGY" type="CLINICAL_HISTORY">Four month old with cough. </text>
      <text origin="CCHMC_RADIOLOGY" type="IMPRESSION">RLL pneumonia &amp; no effusion.</text>
    </texts>
  </doc>
  <doc id="97638203" type="RADIOLOGY_REPORT">
    <codes></codes>
    <texts>
      <text origin="CCHMC_RADIOLOGY" type="IMPRESSION">No hydronephrosis.</text>
    </texts>
  </doc>
</docs>
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "reports.xml"
    path.write_text(text, encoding="utf-8")
    return path


def test_reports_sections_and_codes(tmp_path: Path) -> None:
    reports = list(read_reports(write(tmp_path, XML), "cmc2007"))
    assert [r.id for r in reports] == ["97638202", "97638203"]
    first = reports[0]
    assert first.text == ("CLINICAL HISTORY: Four month old with cough.\n"
                          "IMPRESSION: RLL pneumonia & no effusion.")
    assert first.metadata == {"codes": "786.2;486"}
    assert first.source.endswith("reports.xml:3")
    assert reports[1].metadata == {}
    doc = next(Segmenter().segment_many(reports[:1]))
    assert [(s.section, s.text) for s in doc.sentences] == [
        ("indication", "Four month old with cough."),
        ("impression", "RLL pneumonia & no effusion.")]


def test_coded_only(tmp_path: Path) -> None:
    assert [r.id for r in read_reports(write(tmp_path, XML), "cmc2007-coded")] == ["97638202"]


def test_duplicate_id_names_line(tmp_path: Path) -> None:
    doc = XML.split("<docs>")[1].split("</docs>")[0]
    path = write(tmp_path, XML.replace("</docs>", doc + "</docs>"))
    with pytest.raises(InputError, match=r"reports\.xml:2[0-9]: field 'doc/@id': duplicate id"):
        list(read_reports(path, "cmc2007"))
    stats = ReadStats()
    assert len(list(read_reports(path, "cmc2007", skip_bad=True, stats=stats))) == 2
    assert stats.skipped == {"duplicate id": 2}


def test_malformed_xml_names_line(tmp_path: Path) -> None:
    path = write(tmp_path, XML.replace("</texts>\n  </doc>\n  <doc", "</texts>\n  <doc", 1))
    with pytest.raises(InputError, match=r"reports\.xml:\d+: malformed XML"):
        list(read_reports(path, "cmc2007"))


def test_entity_declarations_refused(tmp_path: Path) -> None:
    bomb = XML.replace("<docs>", '<!DOCTYPE docs [<!ENTITY a "aaaaaaaa">]>\n<docs>')
    with pytest.raises(InputError, match="DTD and entity declarations are not accepted"):
        list(read_reports(write(tmp_path, bomb), "cmc2007"))


def test_empty_report_is_a_record_error(tmp_path: Path) -> None:
    path = write(tmp_path, XML.replace("No hydronephrosis.", " "))
    with pytest.raises(InputError, match=r"reports\.xml:14: field 'texts/text': empty text"):
        list(read_reports(path, "cmc2007"))
