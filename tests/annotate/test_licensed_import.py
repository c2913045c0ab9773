"""`clinsearch lexicon import` of licensed vocabularies, on small files written here in each
release's real layout: UMLS RRF (MRCONSO 18 fields, MRSTY 6, MRREL 16, each line ending in
'|'), SNOMED CT RF2 snapshots (tab-separated, header row), RadLex OWL (RDF/XML) and CSV."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from clinsearch.annotate.annotator import Annotator
from clinsearch.annotate.lexicon import Lexicon
from clinsearch.annotate.lexicon_import import LicensedOptions, read_concepts
from clinsearch.cli import app
from clinsearch.errors import InputError

ENG, SUPPRESSED = "ENG", "O"
MINI_LEXICON = Path(__file__).parent / "mini_lexicon.yaml"  # a base that stays the same


def conso(cui: str, string: str, sab: str = "MSH", code: str = "D0", lat: str = ENG,
          preferred: bool = False, suppress: str = "N") -> str:
    """One MRCONSO.RRF line: CUI LAT TS LUI STT SUI ISPREF AUI SAUI SCUI SDUI SAB TTY CODE STR
    SRL SUPPRESS CVF, then the trailing '|'."""
    ts, stt, ispref = ("P", "PF", "Y") if preferred else ("S", "VO", "N")
    fields = [cui, lat, ts, "L0000001", stt, "S0000001", ispref, "A0000001", "", "", "", sab,
              "PT", code, string, "0", suppress, "256"]
    return "|".join(fields) + "|"


def sty(cui: str, tui: str, name: str) -> str:
    return "|".join([cui, tui, "B2.2.1.2.1", name, "AT0000001", "256"]) + "|"


def rel(child: str, relation: str, parent: str, sab: str = "MSH") -> str:
    """One MRREL.RRF line: CUI1 AUI1 STYPE1 REL CUI2 AUI2 STYPE2 RELA RUI SRUI SAB SL RG DIR
    SUPPRESS CVF (REL: the relation of CUI2 to CUI1)."""
    return "|".join([child, "A1", "SCUI", relation, parent, "A2", "SCUI", "isa", "R1", "",
                     sab, sab, "", "", "N", ""]) + "|"


@pytest.fixture
def umls(tmp_path: Path) -> Path:
    meta = tmp_path / "META"
    meta.mkdir()
    (meta / "MRCONSO.RRF").write_text("\n".join([
        conso("C0020295", "Hydronephrosis", "MSH", "D006869", preferred=True),
        conso("C0020295", "Hydronephroses", "MSH", "D006869"),
        conso("C0020295", "Hydronephrosis (disorder)", "SNOMEDCT_US", "43064006"),
        conso("C0020295", "Hydronéphrose", "MSHFRE", "D006869", lat="FRE"),
        conso("C0020295", "Uronephrosis", "MSH", "D006869", suppress=SUPPRESSED),
        conso("C0042580", "Vesicoureteral Reflux", "MSH", "D014718", preferred=True),
        conso("C0042580", "VUR", "MSH", "D014718"),
        conso("C0042580", "Urinary reflux", "MSH", "D014718"),
        conso("C0042075", "Urologic Diseases", "MSH", "D014570", preferred=True),
        conso("C0042075", "Urinary reflux", "MSH", "D014570"),
        conso("C0010200", "Coughing", "MSH", "D003371", preferred=True),
        conso("C0010200", "Cough", "MSH", "D003371"),
        conso("C0017725", "Glucose", "MSH", "D005947", preferred=True),
    ]) + "\n", encoding="utf-8")
    (meta / "MRSTY.RRF").write_text("\n".join([
        sty("C0020295", "T047", "Disease or Syndrome"),
        sty("C0042580", "T047", "Disease or Syndrome"),
        sty("C0042075", "T047", "Disease or Syndrome"),
        sty("C0010200", "T184", "Sign or Symptom"),
        sty("C0017725", "T109", "Organic Chemical"),
    ]) + "\n", encoding="utf-8")
    (meta / "MRREL.RRF").write_text("\n".join([
        rel("C0020295", "PAR", "C0042075"),
        rel("C0042580", "RB", "C0042075"),
        rel("C0042075", "CHD", "C0020295"),  # the inverse row: not a parent
        rel("C0010200", "PAR", "C0017725"),  # to a concept filtered out
    ]) + "\n", encoding="utf-8")
    return meta


def test_umls_names_terms_types_parents_codes(umls: Path) -> None:
    options = LicensedOptions(semantic_types=frozenset({"T047", "Sign or Symptom"}))
    concepts = read_concepts(umls, "umls", options=options)
    assert set(concepts) == {"hydronephrosis", "vesicoureteral_reflux", "urologic_diseases",
                             "coughing"}  # glucose (T109) left out
    hydro = concepts["hydronephrosis"]
    assert hydro.type == "disease" and hydro.parents == ("urologic_diseases",)
    assert set(hydro.terms) == {"Hydronephroses", "Hydronephrosis (disorder)"}  # no FRE, no O
    assert dict(hydro.codes) == {"UMLS": "C0020295", "MSH": "D006869",
                                 "SNOMEDCT_US": "43064006"}
    assert concepts["vesicoureteral_reflux"].parents == ("urologic_diseases",)  # RB
    assert concepts["urologic_diseases"].parents == ()  # CHD is no parent
    assert concepts["coughing"].type == "finding" and concepts["coughing"].parents == ()
    only_msh = read_concepts(umls, "umls", options=LicensedOptions(sources=frozenset({"MSH"})))
    assert "Hydronephrosis (disorder)" not in only_msh["hydronephrosis"].terms


def test_umls_bad_line_names_file_line_field(umls: Path) -> None:
    conso_file = umls / "MRCONSO.RRF"
    lines = conso_file.read_text(encoding="utf-8").splitlines()
    lines[2] = lines[2].replace("|N|256|", "|256|")  # 17 fields
    conso_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"MRCONSO\.RRF:3: field 'MRCONSO\.RRF': expected 18"
                                         " fields, found 17"):
        read_concepts(umls, "umls")
    lines[2] = lines[2].replace("C0020295", "X123", 1).replace("|256|", "|N|256|")
    conso_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"MRCONSO\.RRF:3: field 'CUI': 'X123' is not a CUI"):
        read_concepts(umls, "umls")


def test_cli_import_reports_collisions_and_the_lexicon_finds_the_concepts(
        umls: Path, tmp_path: Path) -> None:
    out = tmp_path / "lexicon.yaml"
    result = CliRunner().invoke(app, ["lexicon", "import", str(umls), "--format", "umls",
                                      "--semantic-type", "T047,T184", "--out", str(out),
                                      "--lexicon", str(MINI_LEXICON)])
    assert result.exit_code == 0, result.output
    assert "1 term(s) name several imported concepts" in result.stderr
    collisions = (tmp_path / "lexicon.yaml.collisions.tsv").read_text().splitlines()
    assert collisions[1].startswith("Urinary reflux\turologic_diseases,vesicoureteral_reflux")
    lexicon = Lexicon.load(out)
    assert dict(lexicon.concepts["hydronephrosis"].codes)["UMLS"] == "C0020295"
    assert "pneumonia" in lexicon.concepts  # merged with the base lexicon
    found = Annotator(lexicon).annotate("No hydronephrosis.")
    assert [(f.concept, f.polarity) for f in found] == [("hydronephrosis", "absent")]
    again = CliRunner().invoke(app, ["lexicon", "import", str(umls), "--format", "umls",
                                     "--out", str(out)])
    assert again.exit_code == 2 and "exists" in again.output  # never overwritten silently
    bad = CliRunner().invoke(app, ["lexicon", "import", str(umls / "MRSTY.RRF"), "--format",
                                   "umls", "--out", str(tmp_path / "x.yaml")])
    assert bad.exit_code == 2 and "MRSTY.RRF:1: field 'MRCONSO.RRF'" in bad.output


DESCRIPTION_HEADER = ("id\teffectiveTime\tactive\tmoduleId\tconceptId\tlanguageCode\ttypeId\tterm"
                      "\tcaseSignificanceId")
RELATIONSHIP_HEADER = ("id\teffectiveTime\tactive\tmoduleId\tsourceId\tdestinationId\t"
                       "relationshipGroup\ttypeId\tcharacteristicTypeId\tmodifierId")
FSN, SYNONYM, IS_A = "900000000000003001", "900000000000013009", "116680003"


def description(n: int, concept: str, term: str, kind: str = SYNONYM, active: str = "1",
                language: str = "en") -> str:
    return "\t".join([str(1000 + n), "20240101", active, "900000000000207008", concept, language,
                      kind, term, "900000000000448009"])


def relationship(n: int, source: str, destination: str, active: str = "1",
                 kind: str = IS_A) -> str:
    return "\t".join([str(2000 + n), "20240101", active, "900000000000207008", source,
                      destination, "0", kind, "900000000000011006", "900000000000451002"])


@pytest.fixture
def snomed(tmp_path: Path) -> Path:
    folder = tmp_path / "Snapshot" / "Terminology"
    folder.mkdir(parents=True)
    path = folder / "sct2_Description_Snapshot-en_INT_20240101.txt"
    path.write_text("\n".join([
        DESCRIPTION_HEADER,
        description(1, "233604007", "Pneumonia (disorder)", FSN),
        description(2, "233604007", "Pneumonia"),
        description(3, "233604007", "Lung inflammation", active="0"),
        description(4, "233604007", "Pneumonie", language="fr"),
        description(5, "50417007", "Lower respiratory tract infection (disorder)", FSN),
        description(6, "50417007", "LRTI"),
        description(7, "39607008", "Lung structure (body structure)", FSN),
        description(8, "39607008", "Lung"),
    ]) + "\n", encoding="utf-8")
    (folder / "sct2_Relationship_Snapshot_INT_20240101.txt").write_text("\n".join([
        RELATIONSHIP_HEADER,
        relationship(1, "233604007", "50417007"),
        relationship(2, "233604007", "39607008", kind="363698007"),  # finding site: no IS-A
        relationship(3, "50417007", "39607008", active="0"),
    ]) + "\n", encoding="utf-8")
    return path


def test_snomed_active_fsn_synonyms_is_a(snomed: Path) -> None:
    concepts = read_concepts(snomed, "snomed")
    pneumonia = concepts["pneumonia"]
    assert pneumonia.type == "disease" and pneumonia.terms == ()  # "Pneumonia" is the name
    assert pneumonia.parents == ("lower_respiratory_tract_infection",)
    assert dict(pneumonia.codes) == {"SNOMEDCT": "233604007"}
    assert concepts["lung_structure"].type == "anatomy"
    assert concepts["lower_respiratory_tract_infection"].terms == ("LRTI",)
    tags = LicensedOptions(semantic_types=frozenset({"body structure"}))
    assert set(read_concepts(snomed, "snomed", options=tags)) == {"lung_structure"}


def test_snomed_bad_line(snomed: Path) -> None:
    lines = snomed.read_text(encoding="utf-8").splitlines()
    snomed.write_text("\n".join([*lines, "1\t2\t1"]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"Snapshot-en_INT_20240101\.txt:10: field"
                                         " 'description': expected 9 fields, found 3"):
        read_concepts(snomed, "snomed")


RADLEX_OWL = """<?xml version="1.0"?>
<!DOCTYPE rdf:RDF [
    <!ENTITY owl "http://www.w3.org/2002/07/owl#" >
    <!ENTITY rid "http://www.radlex.org/RID/#" >
]>
<rdf:RDF xmlns="http://www.radlex.org/RID/#" xml:base="http://www.radlex.org/RID/"
     xmlns:rdfs="http://www.w3.org/2000/01/rdf-schema#" xmlns:owl="http://www.w3.org/2002/07/owl#"
     xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
    <owl:Class rdf:about="&rid;RID5350">
        <rdfs:subClassOf rdf:resource="&rid;RID4950"/>
        <rdfs:subClassOf><owl:Restriction><owl:onProperty rdf:resource="&rid;Has_location"/>
            <owl:someValuesFrom rdf:resource="&rid;RID1301"/></owl:Restriction></rdfs:subClassOf>
        <Preferred_name xml:lang="en">pneumonia</Preferred_name>
        <Preferred_name_German xml:lang="de">Pneumonie</Preferred_name_German>
        <Synonym xml:lang="en">pneumonitis</Synonym>
        <rdfs:label xml:lang="en">pneumonia</rdfs:label>
    </owl:Class>
    <owl:Class rdf:about="&rid;RID4950">
        <Preferred_name xml:lang="en">inflammation</Preferred_name>
    </owl:Class>
    <owl:Class rdf:about="&rid;RID9999">
        <Preferred_name>old term</Preferred_name>
        <Obsolete>true</Obsolete>
    </owl:Class>
</rdf:RDF>
"""

RADLEX_CSV = """Class ID,Preferred Label,Synonyms,Definitions,Obsolete,CUI,Semantic Types,Parents
http://www.radlex.org/RID/#RID5350,pneumonia,pneumonitis|lung infection,,false,,,http://www.radlex.org/RID/#RID4950
http://www.radlex.org/RID/#RID4950,inflammation,,,false,,,http://www.radlex.org/RID/#RID34785
http://www.radlex.org/RID/#RID9999,old term,,,true,,,
"""


@pytest.mark.parametrize("fmt", ["radlex-owl", "radlex-csv"])
def test_radlex_releases(tmp_path: Path, fmt: str) -> None:
    path = tmp_path / ("radlex.owl" if fmt == "radlex-owl" else "radlex.csv")
    path.write_text(RADLEX_OWL if fmt == "radlex-owl" else RADLEX_CSV, encoding="utf-8")
    concepts = read_concepts(path, fmt)
    assert set(concepts) == {"pneumonia", "inflammation"}  # obsolete left out
    assert concepts["pneumonia"].parents == ("inflammation",)
    assert "pneumonitis" in concepts["pneumonia"].terms
    assert dict(concepts["pneumonia"].codes) == {"RADLEX": "RID5350"}


def test_radlex_owl_refuses_expanding_and_external_entities(tmp_path: Path) -> None:
    path = tmp_path / "bomb.owl"
    path.write_text(RADLEX_OWL.replace('<!ENTITY rid "http://www.radlex.org/RID/#" >',
                                       '<!ENTITY a "x"><!ENTITY rid "&a;&a;">'))
    with pytest.raises(InputError, match=r"bomb\.owl:\d+: entity 'rid' is not a plain text"):
        read_concepts(path, "radlex-owl")
    path.write_text(RADLEX_OWL.replace('<!ENTITY rid "http://www.radlex.org/RID/#" >',
                                       '<!ENTITY rid SYSTEM "file:///etc/passwd">'))
    with pytest.raises(InputError, match="entity 'rid' is not a plain text"):
        read_concepts(path, "radlex-owl")


def test_radlex_csv_bad_row(tmp_path: Path) -> None:
    path = tmp_path / "radlex.csv"
    path.write_text(RADLEX_CSV.replace("RID#RID4950,inflammation", "x")
                    .replace("http://www.radlex.org/RID/#RID4950,inflammation", "nothing,infl"))
    with pytest.raises(InputError, match=r"radlex\.csv:3: field 'Class ID': 'nothing' names"
                                         " no RID"):
        read_concepts(path, "radlex-csv")


def test_codes_are_validated_in_lexicon_yaml(tmp_path: Path) -> None:
    path = tmp_path / "lex.yaml"
    path.write_text("format: clinsearch-lexicon/1\nconcepts:\n  - id: pneumonia\n"
                    "    name: pneumonia\n    type: disease\n    codes:\n"
                    "      UMLS: C0032285\n      RADLEX: RID5350X\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"lex\.yaml:8: field 'codes\.RADLEX': 'RID5350X' is"
                                         " not a RADLEX code"):
        Lexicon.load(path)
    path.write_text(path.read_text().replace("RID5350X", "RID5350"))
    assert Lexicon.load(path).concepts["pneumonia"].codes == (("RADLEX", "RID5350"),
                                                              ("UMLS", "C0032285"))
