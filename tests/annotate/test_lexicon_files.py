"""A lexicon of several files (``include``), validated with file and line, and its parsed copy in
the private cache."""

from __future__ import annotations

from pathlib import Path

import pytest

from clinsearch.annotate.lexicon import Lexicon, load_lexicon, parse_lexicon
from clinsearch.errors import InputError

MAIN = """format: clinsearch-lexicon/1
name: mine
include: [chest.yaml, kidney.yaml]
anatomy_states:
  links: [is]
  states:
    enlarged: {polarity: present, words: [enlarged]}
"""
CHEST = """format: clinsearch-lexicon/1
sources: [chest source]
concepts:
  - {id: heart, name: heart, type: anatomy, states: {enlarged: [cardiomegaly]}}
  - {id: cardiomegaly, name: cardiomegaly, type: finding}
modifiers:
  laterality: {right: [rt]}
"""
KIDNEY = """format: clinsearch-lexicon/1
sources: [kidney source]
concepts:
  - {id: hydronephrosis, name: hydronephrosis, type: finding, parents: [dilatation]}
  - {id: dilatation, name: dilatation, type: finding}
modifiers:
  laterality: {left: [lt]}
"""


def write(folder: Path, **files: str) -> Path:
    for name, text in files.items():
        (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    return folder / "main.yaml"


def test_included_files_make_one_lexicon(tmp_path: Path) -> None:
    lexicon = Lexicon.load(write(tmp_path, main=MAIN, chest=CHEST, kidney=KIDNEY))
    assert lexicon.name == "mine"
    assert list(lexicon.concepts) == ["heart", "cardiomegaly", "hydronephrosis", "dilatation"]
    assert lexicon.sources == ("chest source", "kidney source")
    assert set(lexicon.modifiers["laterality"]) == {"right", "left"}
    assert lexicon.concepts["heart"].findings_in("enlarged") == ("cardiomegaly",)


@pytest.mark.parametrize(
    ("files", "error"),
    [
        ({"kidney": KIDNEY.replace("id: dilatation", "id: cardiomegaly")},
         r"kidney\.yaml:5: field 'id': duplicate concept id 'cardiomegaly'"),
        ({"kidney": KIDNEY.replace("parents: [dilatation]", "parents: [heart_disease]")},
         r"kidney\.yaml:4: field 'parents': concept 'hydronephrosis' names unknown concept"),
        ({"kidney": KIDNEY.replace("{left: [lt]}", "{right: [r]}")},
         r"kidney\.yaml:7: field 'laterality\.right': value given in another file"),
        ({"kidney": KIDNEY + "include: [chest.yaml]\n"},
         r"kidney\.yaml:8: field 'include': an included file cannot include others"),
        ({"kidney": KIDNEY.replace("clinsearch-lexicon/1", "other/2")},
         r"kidney\.yaml:1: field 'format': unsupported format"),
        ({"main": MAIN.replace("kidney.yaml]", "../kidney.yaml]")},
         r"main\.yaml:3: field 'include': '\.\./kidney\.yaml' is not a \.yaml file name"),
        ({"main": MAIN.replace("kidney.yaml]", "chest.yaml]")},
         r"main\.yaml:3: field 'include': 'chest\.yaml' is included twice"),
        ({"main": MAIN.replace("kidney.yaml]", "lung.yaml]")}, r"lung\.yaml"),
    ],
)
def test_errors_name_the_included_file_and_line(tmp_path: Path, files: dict[str, str],
                                                 error: str) -> None:
    texts = {"main": MAIN, "chest": CHEST, "kidney": KIDNEY} | files
    with pytest.raises(InputError, match=error):
        Lexicon.load(write(tmp_path, **texts))


def test_include_needs_a_folder() -> None:
    with pytest.raises(InputError, match=r"main\.yaml:3: field 'include': .*no folder"):
        parse_lexicon(MAIN, "main.yaml")


def test_the_parsed_lexicon_is_cached_until_a_file_changes(tmp_path: Path) -> None:
    main = write(tmp_path, main=MAIN, chest=CHEST, kidney=KIDNEY)
    cache = tmp_path / "cache"
    reads: list[str] = []

    def beside(name: str) -> tuple[str, str]:
        reads.append(name)
        return (tmp_path / name).read_text(encoding="utf-8"), name

    first = load_lexicon(MAIN, main, beside, cache)
    assert len(list(cache.glob("lexicon-*.json"))) == 1
    again = load_lexicon(MAIN, main, beside, cache)
    assert again == first and again is not first
    (tmp_path / "kidney.yaml").write_text(KIDNEY.replace("name: dilatation",
                                                         "name: dilation"), encoding="utf-8")
    changed = load_lexicon(MAIN, main, beside, cache)
    assert changed.concepts["dilatation"].name == "dilation"
    # an invalid file is never served from the cache: its error is raised
    (tmp_path / "chest.yaml").write_text(CHEST.replace("type: finding", "type: gadget"),
                                         encoding="utf-8")
    with pytest.raises(InputError, match=r"chest\.yaml:5: field 'type'"):
        load_lexicon(MAIN, main, beside, cache)
