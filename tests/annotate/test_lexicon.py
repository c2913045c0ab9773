"""Lexicon loading, validation errors (file, line, field), stats, lookup and YAML round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch.annotate.lexicon import Lexicon, dump_lexicon, parse_lexicon
from clinsearch.annotate.lookup import lookup
from clinsearch.errors import InputError

HEADER = 'format: clinsearch-lexicon/1\nname: t\nversion: "1"\n'


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "lex.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def load_error(tmp_path: Path, text: str) -> InputError:
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        Lexicon.load(path)
    assert info.value.file == str(path)
    return info.value


def test_mini_lexicon_loads_with_stats(mini_lexicon: Lexicon) -> None:
    stats = mini_lexicon.stats()
    assert stats.concepts == len(mini_lexicon.concepts) == 14
    assert stats.by_type["device"] == 1
    assert mini_lexicon.concepts["pneumonia"].parents == ("lung_disease",)
    assert mini_lexicon.modifiers["laterality"]["right"][0] == "right"
    assert mini_lexicon.compounds["RLL"] == {"laterality": "right", "location": "lower lobe"}
    pneumonia = mini_lexicon.concepts["pneumonia"]
    assert stats.surface_forms >= len(pneumonia.surface_forms) + len(pneumonia.abbreviations)


@pytest.mark.parametrize(
    ("body", "line", "field", "words"),
    [
        ("concepts:\n  - id: a\n    name: a\n    type: gadget\n", 7, "type", "unknown type"),
        (
            "concepts:\n  - {id: a, name: a, type: finding}\n  - {id: a, name: b, type: finding}\n",
            6,
            "id",
            "duplicate concept id",
        ),
        (
            "concepts:\n  - {id: a, name: a, type: finding, parents: [zz]}\n",
            5,
            "parents",
            "unknown parent 'zz'",
        ),
        ("concepts:\n  - id: a\n    type: finding\n", 5, "name", "missing"),
        ("concepts:\n  - {id: A-1, name: a, type: finding}\n", 5, "id", "snake_case"),
        (
            "concepts: []\nmodifiers:\n  colour:\n    red: [red]\n",
            6,
            "modifiers",
            "unknown modifier category",
        ),
        (
            "concepts: []\nmodifiers:\n  laterality:\n    right: [right]\n"
            "compounds:\n  RUL: {location: upper lobe}\n",
            9,
            "compounds.RUL",
            "not in the modifier vocabularies",
        ),
        ("concepts:\n  - {id: a, name: a, type: finding, colour: red}\n", 5, "colour", "unknown"),
    ],
)
def test_validation_errors_name_line_and_field(
    tmp_path: Path, body: str, line: int, field: str, words: str
) -> None:
    err = load_error(tmp_path, HEADER + body)
    assert (err.line, err.field) == (line, field)
    assert words in err.message
    assert f"lex.yaml:{line}: field '{field}'" in str(err)


def test_bad_format_tag(tmp_path: Path) -> None:
    err = load_error(tmp_path, "format: clinsearch-lexicon/9\nconcepts: []\n")
    assert (err.line, err.field) == (1, "format")
    assert "unsupported format" in err.message


def test_malformed_yaml_names_line(tmp_path: Path) -> None:
    err = load_error(tmp_path, HEADER + "concepts:\n  - id: a\n    name: [unclosed\n")
    assert err.line is not None and err.line >= 6
    assert "malformed YAML" in err.message


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        Lexicon.load(tmp_path / "nope.yaml")


def test_dump_round_trips(mini_lexicon: Lexicon) -> None:
    again = parse_lexicon(dump_lexicon(mini_lexicon), "again.yaml")
    assert again.concepts == mini_lexicon.concepts
    assert again.modifiers == mini_lexicon.modifiers
    assert again.compounds == mini_lexicon.compounds


@pytest.mark.parametrize(
    ("term", "concepts"),
    [
        ("Pleural-Effusions", ["pleural_effusion"]),
        ("pleural effusion", ["pleural_effusion"]),
        ("hydrothorax", ["pleural_effusion"]),
        ("PNA", ["pneumonia"]),
        ("pna", []),
        ("airspace disease", ["opacity"]),
        ("RLL", []),
    ],
)
def test_lookup_concepts(mini_lexicon: Lexicon, term: str, concepts: list[str]) -> None:
    assert [c.id for c in lookup(mini_lexicon, term).concepts] == concepts


def test_lookup_modifiers(mini_lexicon: Lexicon) -> None:
    assert lookup(mini_lexicon, "RLL").modifiers == (
        ("laterality", "right"),
        ("location", "lower lobe"),
    )
    assert lookup(mini_lexicon, "right-sided").modifiers == (("laterality", "right"),)
