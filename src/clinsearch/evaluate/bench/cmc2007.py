"""CMC 2007 benchmark: queries written from ICD-9-CM titles, judged by the majority codes.

The query list is data (``evaluate/data/cmc2007_queries.yaml``: code -> title, query, group,
optional cohort and context: the context flags, beyond asserted findings, that coding counts).
A query's relevant reports carry its code among their majority codes; every other coded report
is judged not relevant; reports without codes stay unjudged. The same list drives "code like a
coder" (``evaluate/coding.py``): one report cohort per code.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import yaml

from clinsearch.annotate.finding import CONTEXTS
from clinsearch.annotate.yaml_nodes import NodeReader, compose, data_text
from clinsearch.corpus.model import Report
from clinsearch.corpus.readers.cmc2007 import CODES_FIELD
from clinsearch.errors import InputError
from clinsearch.evaluate.bench.benchmark import Benchmark
from clinsearch.query_file import Query
from clinsearch.trec import Qrels

SHIPPED = "cmc2007_queries.yaml"
GROUPS = ("renal", "other")
_KEYS = ("title", "query", "group", "index_term", "cohort", "context")


@dataclass(frozen=True, slots=True)
class CodeQuery:
    """One ICD-9-CM code with its title and the query (and cohort) written from it."""

    code: str
    title: str
    query: str
    group: str
    index_term: str = ""  # the alphabetic index entry a residual title was read as
    cohort: str = ""  # the cohort query that codes reports, when not the query itself
    # Context flags whose mentions coding counts besides asserted ones (("indication",): the
    # reason for the exam is coded); () counts asserted findings only.
    context: tuple[str, ...] = ()

    @property
    def qid(self) -> str:
        """The query id: the code, a single token."""
        return self.code

    @property
    def cohort_query(self) -> str:
        """The cohort query that assigns this code."""
        return self.cohort or self.query


def load_code_queries(path: str | Path | None = None) -> list[CodeQuery]:
    """The code queries of ``path`` (None: the shipped list), validated with file:line errors."""
    return _parse(*data_text(path, "clinsearch.evaluate", SHIPPED, "query list"))


def _parse(text: str, file: str) -> list[CodeQuery]:
    """Validate the query list's YAML."""
    reader = NodeReader(file)
    root = compose(text, file)
    if root is None:
        raise InputError("empty query list", file=file)
    top = reader.mapping(root, None)
    for key, node in top.items():
        if key not in ("format", "codes"):
            raise reader.fail(node, key, "unknown key (expected format, codes)")
    if "codes" not in top:
        raise reader.fail(root, "codes", "missing")
    out = []
    for code, node in reader.mapping(top["codes"], "codes").items():
        fields = reader.mapping(node, code)
        for key, value in fields.items():
            if key not in _KEYS:
                raise reader.fail(value, key, f"unknown key (expected {', '.join(_KEYS)})")
        for key in ("title", "query", "group"):
            if key not in fields:
                raise reader.fail(node, key, "missing")
        values = {k: reader.scalar(v, k) for k, v in fields.items() if k != "context"}
        if values["group"] not in GROUPS:
            raise reader.fail(fields["group"], "group", f"expected one of {', '.join(GROUPS)}")
        out.append(CodeQuery(code=code, **values, context=_context(reader, fields)))
    return out


def _context(reader: NodeReader, fields: dict[str, yaml.Node]) -> tuple[str, ...]:
    """A code's ``context`` (a flag or a list of them), each a context flag, in CONTEXTS order."""
    node = fields.get("context")
    if node is None:
        return ()
    flags = reader.strings(node, "context")
    for flag in flags:
        if flag not in CONTEXTS:
            raise reader.fail(node, "context", f"unknown context '{flag}'"
                              f" (expected {', '.join(CONTEXTS)})")
    return tuple(c for c in CONTEXTS if c in flags)


def report_codes(reports: Iterable[Report]) -> dict[str, set[str]]:
    """Each coded report's majority codes (reports without codes left out)."""
    out = {}
    for report in reports:
        codes = report.metadata.get(CODES_FIELD, "")
        if codes:
            out[report.id] = set(codes.split(";"))
    return out


def cmc_benchmark(gold: dict[str, set[str]], queries: list[CodeQuery], min_relevant: int = 2
                  ) -> Benchmark:
    """Queries of the codes with at least ``min_relevant`` reports in ``gold``; every coded
    report judged (1: has the code, 0: has not)."""
    counts = Counter(code for codes in gold.values() for code in codes)
    kept = [q for q in queries if counts[q.code] >= min_relevant]
    grades = {q.qid: {doc: int(q.code in codes) for doc, codes in gold.items()} for q in kept}
    return Benchmark([Query(q.qid, q.query, q.group) for q in kept], Qrels(grades))
