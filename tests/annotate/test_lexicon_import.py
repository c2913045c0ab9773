"""Importing CSV and OBO vocabularies, merged with or replacing a base lexicon."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.lexicon_import import (
    import_lexicon,
    merge_concepts,
    read_csv_concepts,
    read_obo_concepts,
)
from clinsearch.errors import InputError

OBO = """format-version: 1.2
ontology: test

[Term]
id: TST:0001
name: lung nodule
synonym: "pulmonary nodule" EXACT []
synonym: "lung spot" RELATED []
synonym: "coin lesion" BROAD []

[Term]
id: TST:0002
name: calcified lung nodule
is_a: TST:0001 ! lung nodule
synonym: "calcified nodule" EXACT []

[Term]
id: TST:0003
name: old term
is_obsolete: true
"""


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    path = tmp_path / "mine.csv"
    path.write_text(
        "concept,term,type\n"
        "pneumonia,lobar pneumonia,\n"
        "Hiatal hernia,hiatus hernia,disease\n"
        "Hiatal hernia,hiatal hernias,\n",
        encoding="utf-8",
    )
    return path


def test_csv_concepts(csv_file: Path) -> None:
    concepts = read_csv_concepts(csv_file)
    assert concepts["hiatal_hernia"].name == "Hiatal hernia"
    assert concepts["hiatal_hernia"].type == "disease"
    assert concepts["hiatal_hernia"].terms == ("hiatus hernia", "hiatal hernias")
    assert concepts["pneumonia"].type == "finding"


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("concept,term\npneumonia\n", 2, "expected: concept, term"),
        ("concept,term,type\nx,y,gadget\n", 2, "unknown type"),
        ("a,b,finding\na,c,disease\n", 2, "has type 'finding' on line 1"),
    ],
)
def test_csv_errors_name_the_line(tmp_path: Path, text: str, line: int, words: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_csv_concepts(path)
    assert info.value.line == line
    assert words in str(info.value)
    assert f"bad.csv:{line}" in str(info.value)


def test_obo_concepts(tmp_path: Path) -> None:
    path = tmp_path / "t.obo"
    path.write_text(OBO, encoding="utf-8")
    concepts = read_obo_concepts(path)
    assert set(concepts) == {"tst_0001", "tst_0002"}
    nodule = concepts["tst_0001"]
    assert nodule.name == "lung nodule"
    assert nodule.terms == ("lung spot", "pulmonary nodule")  # BROAD synonym left out
    assert concepts["tst_0002"].parents == ("tst_0001",)


def test_bad_obo_is_an_input_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.obo"
    path.write_text("this is not [an ontology\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.obo"):
        read_obo_concepts(path)


def test_merge_extends_and_adds(mini_lexicon: Lexicon, csv_file: Path) -> None:
    merged = merge_concepts(mini_lexicon, read_csv_concepts(csv_file))
    assert len(merged.concepts) == len(mini_lexicon.concepts) + 1
    assert "lobar pneumonia" in merged.concepts["pneumonia"].terms
    assert merged.concepts["pneumonia"].type == "disease"  # the base keeps its type
    assert merged.modifiers == mini_lexicon.modifiers


def test_replace_keeps_only_imported_concepts(mini_lexicon: Lexicon, csv_file: Path) -> None:
    replaced = merge_concepts(mini_lexicon, read_csv_concepts(csv_file), replace=True)
    assert set(replaced.concepts) == {"pneumonia", "hiatal_hernia"}
    assert replaced.compounds == mini_lexicon.compounds


def test_import_writes_a_loadable_lexicon_the_annotator_uses(
    tmp_path: Path, mini_lexicon: Lexicon
) -> None:
    obo = tmp_path / "t.obo"
    obo.write_text(OBO, encoding="utf-8")
    out = tmp_path / "merged.yaml"
    import_lexicon(obo, "obo", out, base=mini_lexicon)
    merged = Lexicon.load(out)
    assert merged.concepts["tst_0002"].parents == ("tst_0001",)
    findings = Annotator(merged).annotate("No calcified nodules. Left pulmonary nodule.")
    assert [(f.concept, f.polarity) for f in findings] == [
        ("tst_0002", "absent"),
        ("tst_0001", "present"),
    ]
    assert findings[1].pattern == "finding|present|lung nodule|left"


def test_unknown_import_format(tmp_path: Path, mini_lexicon: Lexicon) -> None:
    with pytest.raises(InputError, match="unknown import format"):
        import_lexicon(tmp_path / "x", "xml", tmp_path / "o.yaml", base=mini_lexicon)
