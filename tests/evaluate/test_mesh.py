"""IU X-ray MeSH parsing and the shipped MeSH-to-lexicon map."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from clinsearch.annotate.lexicon import Lexicon
from clinsearch.errors import InputError
from clinsearch.evaluate.mesh import MeshMap, MeshTerm, parse_mesh


@pytest.fixture(scope="module")
def mesh() -> MeshMap:
    return MeshMap.load()


def test_parse_mesh_splits_terms_and_modifiers() -> None:
    assert parse_mesh("Opacity/lung/base/left;Lung/hypoinflation") == [
        MeshTerm("Opacity", ("lung", "base", "left")),
        MeshTerm("Lung", ("hypoinflation",)),
    ]


def test_parse_mesh_tidies_whitespace_and_skips_empty_parts() -> None:
    assert parse_mesh(" Subcutaneous  Emphysema ;; Technical Quality of Image Unsatisfactory ") == [
        MeshTerm("Subcutaneous Emphysema"),
        MeshTerm("Technical Quality of Image Unsatisfactory"),
    ]
    assert parse_mesh("") == []


def test_gold_concepts_and_modifier_pairs(mesh: MeshMap) -> None:
    gold = mesh.gold("Opacity/lung/base/left;Lung/hypoinflation;Cardiomegaly/borderline")
    assert gold.concepts == {"opacity", "low_lung_volumes", "cardiomegaly"}
    assert gold.pairs == {
        ("opacity", "laterality", "left"),
        ("opacity", "location", "base"),
        ("cardiomegaly", "severity", "borderline"),
    }


@pytest.mark.parametrize(
    ("cell", "concepts"),
    [
        ("normal", set()),
        ("No Indexing", set()),
        ("Technical Quality of Image Unsatisfactory ", set()),
        ("Lung/hyperdistention/mild", {"hyperinflation"}),
        ("Lung/bilateral/obscured", set()),
        ("Lung/bilateral/enlarged/hilum/lymph nodes", {"lymphadenopathy"}),
        ("Aorta/tortuous", {"tortuous_aorta"}),
        ("Aorta/obscured", set()),
        ("Thoracic vertebrae/degenerative/mild", {"degenerative_change"}),
        ("Costophrenic Angle/bilateral/blunted", {"blunted_costophrenic_angle"}),
        ("Costophrenic Angle/obscured", set()),
        (
            "Diaphragm/elevated/right;Diaphragm/bilateral/flattened",
            {"elevated_hemidiaphragm", "flattened_diaphragm"},
        ),
        ("Markings/bronchovascular", {"bronchovascular_crowding"}),
        ("Markings/lung/mild", {"increased_lung_markings"}),
        ("Subcutaneous  Emphysema", {"subcutaneous_emphysema"}),
        ("Emphysema;Pulmonary Emphysema", {"emphysema"}),
    ],
)
def test_heading_rules(mesh: MeshMap, cell: str, concepts: set[str]) -> None:
    assert mesh.gold(cell).concepts == concepts


def test_skeletal_site_becomes_location(mesh: MeshMap) -> None:
    gold = mesh.gold("Fractures, Bone/ribs/right/healed")
    assert gold.pairs == {
        ("fracture", "location", "rib"),
        ("fracture", "laterality", "right"),
        ("fracture", "temporal", "chronic"),
    }


def test_unknown_heading_and_modifier_are_errors(mesh: MeshMap) -> None:
    with pytest.raises(InputError, match="heading 'Unicorn'"):
        mesh.gold("Unicorn/left")
    with pytest.raises(InputError, match="modifier 'sparkly'"):
        mesh.gold("Opacity/sparkly")


def test_shipped_map_fits_the_shipped_lexicon(mesh: MeshMap) -> None:
    assert mesh.problems(Lexicon.load()) == []
    assert len(mesh.targets) >= 100


def test_every_iu_heading_and_modifier_is_mapped(mesh: MeshMap, iu_csv: Path) -> None:
    with iu_csv.open(newline="", encoding="utf-8") as fh:
        cells = [row["MeSH"] for row in csv.DictReader(fh)]
    golds = [mesh.gold(cell) for cell in cells]  # raises on anything unmapped
    assert sum(bool(g.concepts) for g in golds) > 2000
    found = {c for g in golds for c in g.concepts}
    assert found == mesh.targets  # every mapped concept occurs, nothing unreachable


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "map.yaml"
    path.write_text(text, encoding="utf-8")
    return path


HEAD = "format: clinsearch-iu-mesh-map/1\nmodifiers:\n  left: {category: laterality, value: left}\n"


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        (
            "headings:\n  Lung:\n    - {when: [hyperdistention], concept: hyperinflation}\n",
            6,
            "last rule must be a default",
        ),
        ("headings:\n  Lung:\n    - {when: [x], concept: a, ignore: b}\n", 6, "needs `concept` or"),
        ("headings:\n  Opacity: opacity\n  opacity: opacity\n", 6, "listed twice"),
        ("headings:\n  Opacity: opacity\nignore:\n  Opacity: why\n", 5, "listed twice"),
    ],
)
def test_malformed_map_names_file_and_line(
    tmp_path: Path, body: str, line: int, message: str
) -> None:
    path = _write(tmp_path, HEAD + body)
    with pytest.raises(InputError, match=message) as err:
        MeshMap.load(path)
    assert err.value.file == str(path)
    assert err.value.line == line


def test_bad_modifier_meaning_and_format(tmp_path: Path) -> None:
    bad_mod = "format: clinsearch-iu-mesh-map/1\nheadings: {}\nmodifiers:\n  left: {category: x}\n"
    with pytest.raises(InputError, match=r"\{category, value\}") as err:
        MeshMap.load(_write(tmp_path, bad_mod))
    assert err.value.line == 4
    with pytest.raises(InputError, match="expected 'clinsearch-iu-mesh-map/1'"):
        MeshMap.load(_write(tmp_path, "format: other\nheadings: {}\nmodifiers: {}\n"))
    with pytest.raises(InputError, match="cannot read"):
        MeshMap.load(tmp_path / "missing.yaml")
