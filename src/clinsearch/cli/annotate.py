"""Finding extraction commands: ``annotate``, ``explain`` and the ``lexicon`` group."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from clinsearch.cli import app, err_console
from clinsearch.cli.corpus_input import report_long_sentences
from clinsearch.cli.options import LexiconOpt
from clinsearch.errors import ClinsearchError

lexicon_app = typer.Typer(
    help="Inspect, query and extend the finding lexicon.", no_args_is_help=True
)
app.add_typer(lexicon_app, name="lexicon")


@app.command("annotate")
def annotate_cmd(
    input: Annotated[Path, typer.Option("--input", help='JSONL: {"id", "text", "targets"?}.')],
    output: Annotated[Path, typer.Option("--output", help='JSONL: {"id", "findings": [...]}.')],
    lexicon: LexiconOpt = None,
    batch_size: Annotated[int, typer.Option(help="Texts per nlp.pipe batch.")] = 256,
    force: Annotated[
        bool, typer.Option("--force", help="Overwrite the --output file if it exists.")
    ] = False,
    report: Annotated[
        bool, typer.Option("--report", help="Read each text as a whole report, as an index "
                           "does: sections, sentences, and the report-level reading "
                           "(differentials, findings and impression reconciled), each changed "
                           "finding with its rule and trigger.")
    ] = False,
) -> None:
    """Find concepts with polarity, context flags and modifiers in every line of a JSONL file."""
    from functools import partial

    from rich.progress import Progress

    from clinsearch.annotate.annotator import annotator_for
    from clinsearch.annotate.jsonl_annotation import annotate_jsonl

    annotator = annotator_for(str(lexicon) if lexicon else None)
    reader = None
    if report:
        from clinsearch.index.report_view import read_report

        reader = partial(read_report, annotator=annotator, batch_size=batch_size)
    long_before = annotator.long_sentences
    with Progress(console=err_console, transient=True) as progress:
        task = progress.add_task("annotating", total=None)
        count = annotate_jsonl(
            annotator, input, output, batch_size, lambda n: progress.advance(task, n), force,
            reader,
        )
    err_console.print(f"annotated {count} texts -> {escape(str(output))}")
    report_long_sentences(annotator.long_sentences - long_before)


@app.command("explain")
def explain_cmd(
    sentence: Annotated[str, typer.Argument(help="The sentence to annotate.")],
    lexicon: LexiconOpt = None,
    format: Annotated[
        str, typer.Option("--format", help="table (marked text, one line per finding) or json.")
    ] = "table",
    report: Annotated[
        bool, typer.Option("--report", help="Read the text as a whole report, as an index does: "
                           "sections, sentences, and the report-level reading (differentials, "
                           "what the impression concludes).")
    ] = False,
) -> None:
    """Show the findings of one sentence (or, with --report, one report): spans marked in the
    text and a table of patterns, with the cue (trigger) that made each finding absent,
    uncertain or not asserted now."""
    import json

    from clinsearch.annotate.annotator import annotator_for
    from clinsearch.annotate.explain_findings import explain
    from clinsearch.annotate.jsonl_annotation import finding_to_dict

    if format not in ("table", "json"):
        raise ClinsearchError(f"unknown --format {format[:40]!r} (table or json)")
    annotator = annotator_for(str(lexicon) if lexicon else None)
    if report:
        from clinsearch.index.report_view import read_report

        findings = read_report(sentence, annotator)
    else:
        findings = annotator.annotate(sentence)
    if format == "json":
        print(json.dumps({"findings": [finding_to_dict(f) for f in findings]}, indent=2))
    else:
        Console().print(explain(sentence, findings))


@lexicon_app.command("stats")
def lexicon_stats_cmd(lexicon: LexiconOpt = None) -> None:
    """Count concepts by type, surface forms and modifier values."""
    from rich.table import Table

    from clinsearch.annotate.lexicon import Lexicon

    lex = Lexicon.load(lexicon)
    stats = lex.stats()
    table = Table(title=f"{lex.name} {lex.version}".strip())
    table.add_column("what")
    table.add_column("count", justify="right")
    table.add_row("concepts", str(stats.concepts))
    for ctype, n in stats.by_type.items():
        table.add_row(f"  {ctype}", str(n))
    table.add_row("surface forms (names, terms, abbreviations)", str(stats.surface_forms))
    for category, n in stats.modifier_values.items():
        table.add_row(f"modifier values: {category}", str(n))
    table.add_row("modifier surface forms (incl. compounds)", str(stats.modifier_forms))
    Console().print(table)


@lexicon_app.command("lookup")
def lexicon_lookup_cmd(
    term: Annotated[str, typer.Argument(help="A term as it might appear in a report.")],
    lexicon: LexiconOpt = None,
) -> None:
    """Show which concept(s) and modifier values a term resolves to (exit 1 if none)."""
    from clinsearch.annotate.lexicon import Lexicon
    from clinsearch.annotate.lookup import lookup

    result = lookup(Lexicon.load(lexicon), term)
    console = Console()
    if not result.concepts and not result.modifiers:
        console.print(f"'{escape(term)}': no concept or modifier")
        raise typer.Exit(1)
    for c in result.concepts:
        parents = f" parents={','.join(c.parents)}" if c.parents else ""
        console.print(f"concept {c.id}: {escape(c.name)} type={c.type} region={c.region}{parents}")
    for category, value in result.modifiers:
        console.print(f"modifier {category}={escape(value)}")


@lexicon_app.command("import")
def lexicon_import_cmd(
    source: Annotated[Path, typer.Argument(
        help="csv: concept, term[, type]; obo: an OBO ontology; umls: the META folder (or its"
        " MRCONSO.RRF, with MRSTY.RRF and MRREL.RRF beside it); snomed: the"
        " sct2_Description_Snapshot file (its Relationship snapshot beside it); radlex-owl /"
        " radlex-csv: the RadLex OWL or CSV release.")],
    format: Annotated[str, typer.Option(
        "--format", help="csv, obo, umls, snomed, radlex-owl or radlex-csv.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the merged lexicon YAML.")],
    replace: Annotated[bool, typer.Option("--replace", help="Replace the base concepts.")] = False,
    lexicon: LexiconOpt = None,
    default_type: Annotated[
        str, typer.Option("--type", help="Type of concepts that name none.")
    ] = "finding",
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out if it exists.")] = False,
    skip_collisions: Annotated[
        bool,
        typer.Option("--skip-collisions", help="Leave out imported terms that already name"
                     " another concept (default: refuse the import, listing them)."),
    ] = False,
    sab: Annotated[str | None, typer.Option(
        "--sab", help="umls: source vocabularies to keep, comma-separated (e.g."
        " SNOMEDCT_US,MSH); default all.")] = None,
    language: Annotated[str | None, typer.Option(
        "--language", help="umls: LAT values (default ENG); snomed: language codes (default"
        " en); comma-separated.")] = None,
    semantic_type: Annotated[str | None, typer.Option(
        "--semantic-type", help="umls: TUIs or semantic type names (T047,T184); snomed:"
        " semantic tags (disorder,finding); comma-separated; default all.")] = None,
    relationships: Annotated[Path | None, typer.Option(
        "--relationships", help="snomed: the relationship snapshot (default: the"
        " sct2_Relationship_Snapshot file beside SOURCE).")] = None,
    type_map: Annotated[Path | None, typer.Option(
        "--type-map", help="YAML mapping UMLS semantic types and SNOMED CT tags to concept"
        " types (default: the shipped licensed_types.yaml).")] = None,
    collisions: Annotated[Path | None, typer.Option(
        "--collisions", help="Where to write the terms several imported concepts share (TSV;"
        " default: OUT with .collisions.tsv).")] = None,
) -> None:
    """Import a vocabulary (CSV, OBO, UMLS RRF, SNOMED CT RF2, RadLex OWL or CSV), merged with
    (or replacing) the base lexicon's concepts; licensed vocabularies keep their codes (CUI,
    SCTID, RID). Large files are streamed. --out is never overwritten unless --force."""
    from clinsearch.annotate.lexicon import Concept, Lexicon
    from clinsearch.annotate.lexicon_import import (
        LicensedOptions,
        import_lexicon,
        write_collisions,
    )

    def items(text: str | None) -> frozenset[str]:
        return frozenset(v.strip() for v in (text or "").split(",") if v.strip())

    def report_skipped(clash: tuple[str, str, str]) -> None:
        cid, form, other = clash
        err_console.print(f"left out '{escape(form)}' of {cid}: already a term of {other}")

    def report_shared(shared: list[tuple[str, tuple[str, ...]]],
                      imported: dict[str, Concept]) -> None:
        if not shared:
            return
        path = collisions or out.with_name(out.name + ".collisions.tsv")
        write_collisions(path, shared, imported, force)
        examples = "; ".join(f"'{escape(t)}': {', '.join(ids[:3])}" for t, ids in shared[:3])
        err_console.print(f"{len(shared)} term(s) name several imported concepts (e.g."
                          f" {examples}); all listed in {escape(str(path))}")

    options = LicensedOptions(items(sab), items(language), items(semantic_type), relationships,
                              type_map)
    merged = import_lexicon(source, format, out, Lexicon.load(lexicon), replace, default_type,
                            force=force, skip_collisions=skip_collisions,
                            on_skipped=report_skipped, options=options,
                            on_shared=report_shared)
    stats = merged.stats()
    err_console.print(
        f"wrote {escape(str(out))}: {stats.concepts} concepts, {stats.surface_forms} surface forms"
    )
