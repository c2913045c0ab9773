"""Query fuzz test (issue 15): no query a user can type makes search or the cohort parser crash.

10,000 seeded queries built from the shipped lexicon (terms, abbreviations, modifiers of all its
files: chest, abdomen, urology, neuro, musculoskeletal, vascular, clinical history, HPO) with
hedges, negations, "or", misspellings, case changes, punctuation, unicode and very long text,
over the bundled sample corpus with a tiny dense encoder and a tiny term model, in batches:
all of them go through query understanding (the parser concept and hybrid search share) and
the cohort parser, and each through one of the 16 (method, level) pairs in turn (625 per pair,
to keep the test cheap). Every search must return a list of hits (a query of more words than
``clinsearch.limits`` allows a phrase may be refused with its LimitError instead); the cohort
parser must either parse a query or raise its syntax error, and cohort evaluation (every 10th
query) may only raise that error or a LimitError too.
"""

from __future__ import annotations

import random
import re
from importlib import resources
from pathlib import Path

import pytest
import yaml

from clinsearch import Index, IndexConfig
from clinsearch.annotate.lexicon import SHIPPED, Lexicon
from clinsearch.annotate.phrase import phrase_words
from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path
from clinsearch.errors import LimitError
from clinsearch.limits import MAX_PHRASE_WORDS
from clinsearch.search.cohort import Cohort, CohortSyntaxError, parse
from clinsearch.units import LEVELS

QUERIES = 10_000
SEED = 15
LONG_EVERY = 200  # one query in this many is very long (annotation time grows with length)
METHODS = ("bm25", "concept", "dense", "hybrid")
HEDGES = ("possible", "suspected", "most likely", "consistent with", "cannot exclude",
          "no", "no evidence of", "without", "history of", "mother had", "evaluate for",
          "resolved", "normal", "clear", "not", "NOT", "questionable", "? ")
JOINERS = (" or ", " OR ", " and ", " / ", ", ", "; ", " versus ", " and/or ", " AND NOT ")
PUNCT = [*"()\"'[]{}:;,.!?/\\|&*^%$#@~`<>=+-_", "type:", "date:", "text:\"", "section:",
         "context:", "same sentence", "..", "--"]
UNICODE = ("é", "ü", "ß", "ø", "中文", "肺炎", "🫁", "\u200b", "\u202e", "\ufeff", "Ω", "½",
           "ﬁ", "İ", "\u0301", "\t", "\n", "\x00")


def _misspell(word: str, rng: random.Random) -> str:
    if len(word) < 3:
        return word + rng.choice("aeiou")
    i = rng.randrange(1, len(word) - 1)
    op = rng.randrange(4)
    if op == 0:
        return word[:i] + word[i + 1 :]
    if op == 1:
        return word[:i] + word[i] + word[i:]
    if op == 2:
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    return word[:i] + rng.choice("abcdefghijklmnopqrstuvwxyz") + word[i + 1 :]


def _case(text: str, rng: random.Random) -> str:
    return rng.choice((str.upper, str.lower, str.title,
                       lambda t: "".join(c.upper() if rng.random() < 0.5 else c for c in t)))(text)


def generate(lexicon: Lexicon, n: int = QUERIES, seed: int = SEED) -> list[str]:
    """``n`` seeded queries, cycling through the kinds of text users type."""
    rng = random.Random(seed)
    terms = sorted({t for c in lexicon.concepts.values()
                    for t in (*c.surface_forms, *c.abbreviations)})
    modifiers = sorted({f for values in lexicon.modifiers.values() for forms in values.values()
                        for f in forms} | set(lexicon.compounds))

    def term() -> str:
        return rng.choice(terms)

    def finding() -> str:
        mods = " ".join(rng.choice(modifiers) for _ in range(rng.randrange(3)))
        return f"{mods} {term()}".strip()

    kinds = [
        term,
        finding,
        lambda: f"{rng.choice(HEDGES)} {finding()}",
        lambda: rng.choice(JOINERS).join(finding() for _ in range(rng.randrange(2, 5))),
        lambda: " ".join(_misspell(w, rng) for w in finding().split()),
        lambda: _case(finding(), rng),
        lambda: "".join(ch + (rng.choice(PUNCT) if rng.random() < 0.3 else "")
                        for ch in finding()),
        lambda: rng.choice(PUNCT) + finding() + rng.choice(PUNCT) * rng.randrange(3),
        lambda: f"{rng.choice(UNICODE)}{finding()}{rng.choice(UNICODE)} {rng.choice(UNICODE)}",
        lambda: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789 ")
                        for _ in range(rng.randrange(1, 40))),
        lambda: rng.choice(("2020-01-01", "5 mm", "12", "x", "no", "or", "NOT", "(", ")",
                            '"', "a or b", "no no no", "?", "...")),
    ]
    out = []
    for i in range(n):
        if i % LONG_EVERY == LONG_EVERY - 1:  # very long: 1,000 to 4,000 characters
            query = " ".join(finding() for _ in range(rng.randrange(40, 120)))
        else:
            query = kinds[i % len(kinds)]()
        out.append(query if query.strip() else "x")  # an empty query is a user error, tested apart
    return out


@pytest.fixture(scope="module")
def fuzz_index(tmp_path_factory: pytest.TempPathFactory) -> tuple[Index, Path]:
    """The bundled sample corpus with BM25, findings, concepts and tiny dense vectors, and a
    tiny term model (unknown words are mapped through it instead of MiniLM, for speed)."""
    from ..tiny_models import build_tiny_bert

    root = tmp_path_factory.mktemp("fuzz")
    tiny = build_tiny_bert(root / "tiny")
    config = IndexConfig(("bm25", "findings", "concepts", "dense"),
                         {"dense": {"model": str(tiny)}, "concepts": {"term_model": str(tiny)}})
    reports = read_reports(sample_reports_path(), SAMPLE_FORMAT)
    return Index.build(reports, root / "idx", config, progress=False), tiny


def test_generated_queries_cover_every_kind() -> None:
    queries = generate(Lexicon.load(), 400)
    assert len(set(queries)) > 350 and any(len(q) > 1000 for q in queries)
    assert any(" or " in q.lower() for q in queries) and any("\u200b" in q for q in queries)
    assert generate(Lexicon.load(), 50) == generate(Lexicon.load(), 50)  # seeded


def test_generated_queries_cover_every_shipped_vocabulary() -> None:
    """The queries draw on each file of the shipped lexicon (chest, abdomen, urology, neuro,
    musculoskeletal, vascular, clinical history, HPO), not on the chest X-ray terms alone."""
    lexicon = Lexicon.load()
    grams = []  # the word n-grams of each query, to look forms up in
    for query in generate(lexicon):
        words = query.lower().split()
        grams.append({" ".join(words[i:j]) for i in range(len(words))
                      for j in range(i + 1, min(i + 7, len(words) + 1))})
    data = resources.files("clinsearch.annotate") / "data"
    files = yaml.safe_load((data / SHIPPED).read_text(encoding="utf-8"))["include"]
    assert len(files) >= 8
    for name in files:
        ids = re.findall(r"^  - id: (\S+)$", (data / name).read_text(encoding="utf-8"), re.M)
        forms = {" ".join(f.lower().split()) for cid in ids
                 for f in lexicon.concepts[cid].surface_forms}
        assert sum(1 for g in grams if not g.isdisjoint(forms)) >= 20, name


def test_no_query_crashes_search_or_the_cohort_parser(
        fuzz_index: tuple[Index, Path]) -> None:
    index, tiny = fuzz_index
    queries = generate(Lexicon.load())
    assert len(queries) >= 10_000
    parser = index.session.retriever("concept", {}).parser
    assert len(parser.parse_many(queries)) == len(queries)
    pairs = [(m, level) for m in METHODS for level in LEVELS]
    refused = 0
    for k, (method, level) in enumerate(pairs):
        batch = queries[k::len(pairs)]
        long = [q for q in batch if phrase_words(q) > MAX_PHRASE_WORDS]
        batch = [q for q in batch if q not in long]
        results = index.search_many(batch, level, 3, method)
        assert len(results) == len(batch) and all(isinstance(r, list) for r in results)
        for query in long:  # over the bound: refused with LimitError, or searched
            try:
                assert isinstance(index.search(query, level, 3, method), list)
            except LimitError:
                refused += 1
    assert refused > 0
    cohort = Cohort(index.path, term_model=tiny)
    parsed = 0
    for i, query in enumerate(queries):
        try:
            parse(query)
            parsed += 1
            if i % 10 == 0:
                cohort.counts(query)
        except CohortSyntaxError as exc:
            assert exc.query == query and 0 <= exc.position <= len(query)
        except LimitError:  # a phrase of too many words or variants: refused before any work
            refused += 1
    assert parsed > len(queries) // 2
