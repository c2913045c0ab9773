"""ConText rules: medspaCy's defaults plus the radiology rules in data/context_radiology.yaml.

The rule file is validated on load like the lexicon: every error names the file, the line and
the field (``parse_rule_file``).

Token-pattern rules are expanded into the literal phrases they match, so ConText matches them
with spaCy's PhraseMatcher: with the patterns in spaCy's token Matcher, ConText took most of
the annotation time (benchmarks/README.md). Also maps ConText categories onto a finding's
polarity and context flags.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from itertools import product
from pathlib import Path
from typing import Any

import yaml
from medspacy.context import ConTextRule

from clinsearch.annotate import context_cues
from clinsearch.annotate.context_cues import WORD, RuleCues
from clinsearch.annotate.derived_cache import cached, digest
from clinsearch.annotate.finding import MASKED, NO_CONTEXT, section_flag
from clinsearch.annotate.lexicon import CONCEPT_TYPES
from clinsearch.annotate.yaml_nodes import SAFE_LOADER, NodeReader, read_document
from clinsearch.cache_dir import default_cache_dir
from clinsearch.errors import InputError

NEGATED = "NEGATED_EXISTENCE"
POSSIBLE = "POSSIBLE_EXISTENCE"
PROBABLE = "PROBABLE_EXISTENCE"  # "most likely X": a hedge that also ends a negation before it
ALTERNATIVE = "ALTERNATIVE"  # "A or B", "A versus B": each alternative is uncertain
HEDGES = frozenset({POSSIBLE, PROBABLE, ALTERNATIVE, MASKED})
RULE_NAME = "rule"  # metadata key: the literal of the rule a phrase was expanded from
LIST = "list"  # metadata key: the cue modifies a list of findings right after it (``ListCue``)
LIST_KEYS = ("min_items", "joins", "types")
INDICATION = "INDICATION"
WITHIN_NORMAL = "WITHIN_NORMAL"  # "... is within normal limits": absent, unless anatomy
MAX_EXPANSION = 5000  # patterns matching more phrases than this stay token patterns
MAX_REPEAT = 2  # OP '*' expands to at most this many repetitions
RADIOLOGY_FILE = "context_radiology.yaml"
RULE_FILE_KEYS = ("masks", "replace_defaults", "terminating_types", "sections",
                  "hedging_modifiers", "conclusion", "rules")
MASK = "MASK"  # pattern token key: any of the file's ``masks`` (de-identification tokens)
CONCLUSION_KEYS = ("section", "governs", "normal", "acute", "denied_by", "differential",
                   "differential_types")
HEDGING_MODIFIER = "HEDGING_MODIFIER"  # the trigger category of a hedging modifier value
RULE_KEYS = ("literal", "category", "direction", "pattern", "max_scope", "terminated_by",
             "allowed_types", "excluded_types", "max_targets", "metadata")
DIRECTIONS = ("FORWARD", "BACKWARD", "BIDIRECTIONAL", "TERMINATE", "PSEUDO")
_CATEGORY_RE = re.compile(r"^[A-Z][A-Z_]*$")
CONTEXT_FLAGS = {
    "HISTORICAL": "historical",
    "HYPOTHETICAL": "hypothetical",
    INDICATION: "hypothetical",
    "FAMILY": "family",
}


def default_rules_path() -> Path:
    """medspaCy's packaged English ConText rules."""
    import medspacy

    return Path(medspacy.__file__).resolve().parents[1] / "resources" / "en" / "context_rules.json"


@dataclass(frozen=True)
class RuleFile:
    """A validated ConText rule file: default literals it replaces, its rules (as dicts), and
    the categories that end the scope of every rule of a category (``terminating_types``)."""

    replace_defaults: tuple[str, ...]
    rules: tuple[dict[str, Any], ...]
    terminating_types: tuple[tuple[str, tuple[str, ...]], ...] = ()
    sections: tuple[tuple[str, str], ...] = ()  # section name -> context flag of its findings
    hedging_modifiers: frozenset[tuple[str, str]] = frozenset()  # (category, value) pairs
    conclusion: Conclusion | None = None
    masks: tuple[str, ...] = ()  # de-identification tokens, lower case (``{MASK: true}``)


@dataclass(frozen=True)
class Conclusion:
    """How a whole report is read after its sentences (``index.conclusion``): the section that
    concludes it (the impression) and the sections it governs: a finding those state present
    that the conclusion names only as uncertain reads uncertain; one stated in one and denied
    in the other reads uncertain on both sides, as does a bare one of the ``acute`` concepts
    (lexicon ids) beside one of its ``normal`` phrases; a ``differential`` phrase hedges the
    ``differential_types`` findings of the sentence before it."""

    section: str
    governs: tuple[str, ...]
    normal: tuple[str, ...] = ()
    acute: tuple[str, ...] = ()
    differential: tuple[str, ...] = ()
    differential_types: tuple[str, ...] = ()
    denied_by: tuple[str, ...] = ()  # trigger categories of a denial (none listed: any absence)


def parse_rule_file(text: str, file: str | Path) -> RuleFile:
    """Parse and validate ConText rule YAML; errors name ``file``, the line and the field."""
    reader, root, top = read_document(text, file, "rule", RULE_FILE_KEYS)
    if "rules" not in top:
        raise reader.fail(root, "rules", "missing")
    replaced = reader.strings(top["replace_defaults"], "replace_defaults") if (
        "replace_defaults" in top) else []
    masks = _masks(reader, top["masks"]) if "masks" in top else ()
    data = yaml.load(text, Loader=SAFE_LOADER)  # a safe loader: plain data only
    nodes = reader.sequence(top["rules"], "rules")
    rules = tuple(_checked_rule(reader, node, rule, masks)
                  for node, rule in zip(nodes, data["rules"], strict=True))
    terminating: list[tuple[str, tuple[str, ...]]] = []
    if "terminating_types" in top:
        node = top["terminating_types"]
        for key, value in reader.mapping(node, "terminating_types").items():
            values = reader.strings(value, "terminating_types")
            if not all(_CATEGORY_RE.match(c) for c in (key, *values)):
                raise reader.fail(value, "terminating_types", "categories must be UPPER_CASE names")
            terminating.append((key, tuple(values)))
    sections = []
    if "sections" in top:
        for name, value in reader.mapping(top["sections"], "sections").items():
            sections.append((name, section_flag(reader.scalar(value, name),
                                                 lambda m, v=value: reader.fail(v, "sections", m))))
    hedging: set[tuple[str, str]] = set()
    if "hedging_modifiers" in top:
        for category, values in reader.mapping(top["hedging_modifiers"],
                                               "hedging_modifiers").items():
            hedging.update((category, v) for v in reader.strings(values, "hedging_modifiers"))
    conclusion = _conclusion(reader, top["conclusion"]) if "conclusion" in top else None
    return RuleFile(tuple(replaced), rules, tuple(terminating), tuple(sections),
                    frozenset(hedging), conclusion, masks)


def _masks(reader: NodeReader, node: yaml.Node) -> tuple[str, ...]:
    """The rule file's ``masks``: the tokens de-identification writes for a hidden word (IU
    X-ray: XXXX), one word each, in lower case as patterns match them."""
    masks = tuple(m.lower() for m in reader.strings(node, "masks"))
    if not masks or not all(re.fullmatch(r"[^\s]+", m) for m in masks):
        raise reader.fail(node, "masks", "must be a list of single words")
    return masks


def _conclusion(reader: NodeReader, node: yaml.Node) -> Conclusion:
    """The rule file's ``conclusion``, checked: known keys, a section, the sections it governs;
    section names and phrases in lower case."""
    fields = reader.mapping(node, "conclusion")
    for key, key_node in reader.key_nodes(node).items():
        if key not in CONCLUSION_KEYS:
            raise reader.fail(key_node, key,
                              f"unknown conclusion key (allowed: {', '.join(CONCLUSION_KEYS)})")
    for required in ("section", "governs"):
        if required not in fields:
            raise reader.fail(node, required, "missing")

    def lower(key: str) -> tuple[str, ...]:
        return tuple(v.lower() for v in reader.strings(fields[key], key)) if key in fields else ()

    def kept(key: str) -> tuple[str, ...]:
        return tuple(reader.strings(fields[key], key)) if key in fields else ()

    if "differential" in fields and "differential_types" not in fields:
        raise reader.fail(node, "differential_types", "missing (the types a differential hedges)")
    for item in reader.sequence(fields["differential_types"], "differential_types") if (
            "differential_types" in fields) else ():
        if reader.scalar(item, "differential_types") not in CONCEPT_TYPES:
            raise reader.fail(item, "differential_types",
                              f"unknown concept type (allowed: {', '.join(CONCEPT_TYPES)})")
    if not all(_CATEGORY_RE.match(c) for c in kept("denied_by")):
        raise reader.fail(fields["denied_by"], "denied_by", "categories must be UPPER_CASE names")
    return Conclusion(reader.scalar(fields["section"], "section").lower(), lower("governs"),
                      lower("normal"), kept("acute"), lower("differential"),
                      kept("differential_types"), kept("denied_by"))


def section_contexts(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """The context flag each section gives its findings: the shipped rules' ``sections``,
    changed by ``overrides`` (section name -> flag, or ``none`` for no flag); section names
    are matched in lower case. A bad flag is an InputError naming the section."""
    meanings = dict(radiology_rules().sections)
    for name, flag in (overrides or {}).items():
        meanings[name] = section_flag(str(flag), lambda m, n=name: InputError(
            m, field=f"section context {n}"))
    return {name.lower(): flag for name, flag in meanings.items() if flag != NO_CONTEXT}


def _checked_rule(reader: NodeReader, node: yaml.Node, rule: Any,
                  masks: tuple[str, ...]) -> dict[str, Any]:
    """One rule, checked: known keys, a literal, a category, a direction, a scope, a pattern
    (whose ``{MASK: true}`` tokens become the file's ``masks``)."""
    fields = reader.mapping(node, "rules")
    for key, key_node in reader.key_nodes(node).items():
        if key not in RULE_KEYS:
            raise reader.fail(key_node, key, f"unknown rule key (allowed: {', '.join(RULE_KEYS)})")
    for required in ("literal", "category"):
        if required not in fields:
            raise reader.fail(node, required, "missing")
        reader.scalar(fields[required], required)
    if not _CATEGORY_RE.match(str(rule["category"])):
        raise reader.fail(fields["category"], "category", "must be an UPPER_CASE name")
    direction = str(rule.get("direction", "BIDIRECTIONAL"))
    if direction not in DIRECTIONS:
        raise reader.fail(fields.get("direction", node), "direction",
                          f"unknown direction '{direction}' (allowed: {', '.join(DIRECTIONS)})")
    scope = rule.get("max_scope")
    if scope is not None and (not isinstance(scope, int) or isinstance(scope, bool) or scope < 1):
        raise reader.fail(fields["max_scope"], "max_scope", "must be a whole number of at least 1")
    if "terminated_by" in fields:
        reader.strings(fields["terminated_by"], "terminated_by")
    if "metadata" in fields and LIST in reader.mapping(fields["metadata"], "metadata"):
        _list_cue(reader, reader.mapping(fields["metadata"], "metadata")[LIST])
    if "pattern" in fields:
        tokens = reader.sequence(fields["pattern"], "pattern")
        for token in tokens:
            reader.mapping(token, "pattern")
        rule = {**rule, "pattern": [_unmasked(reader, token_node, token, masks)
                                    for token_node, token
                                    in zip(tokens, rule["pattern"], strict=True)]}
    try:
        ConTextRule(**rule)
    except Exception as exc:  # medspaCy's own checks of the rule, located at the rule
        raise reader.fail(node, None, f"not a valid ConText rule: {exc}") from None
    return dict(rule)


@dataclass(frozen=True)
class ListCue:
    """A cue that modifies only a list of findings right after it (a rule's ``metadata:
    list``): the findings joined by nothing but ``joins`` words and their own modifiers and
    anatomy, at least ``min_items`` of them ("XXXX atelectasis, infiltrate or effusion"), of
    the concept ``types`` (any when empty): another one ends the list."""

    min_items: int
    joins: frozenset[str]
    types: frozenset[str] = frozenset()

    @classmethod
    def of(cls, metadata: Mapping[str, Any] | None) -> ListCue | None:
        """The list reading of a rule's metadata (already validated), None when it has none."""
        spec = (metadata or {}).get(LIST)
        if spec is None:
            return None
        return cls(int(spec["min_items"]), frozenset(str(w).lower() for w in spec["joins"]),
                   frozenset(spec.get("types") or ()))


def _list_cue(reader: NodeReader, node: yaml.Node) -> None:
    """Check a rule's ``metadata: list``: a mapping of ``min_items`` (a whole number of at
    least 1), ``joins`` (a list of words) and optional ``types`` (concept types)."""
    fields = reader.mapping(node, "list")
    for key, key_node in reader.key_nodes(node).items():
        if key not in LIST_KEYS:
            raise reader.fail(key_node, key, f"unknown list key (allowed: {', '.join(LIST_KEYS)})")
    for required in LIST_KEYS[:2]:
        if required not in fields:
            raise reader.fail(node, required, "missing")
    if not reader.scalar(fields["min_items"], "min_items").isdigit() or int(
            reader.scalar(fields["min_items"], "min_items")) < 1:
        raise reader.fail(fields["min_items"], "min_items", "must be a whole number of at least 1")
    if not reader.strings(fields["joins"], "joins"):
        raise reader.fail(fields["joins"], "joins", "must list at least one word")
    for item in reader.sequence(fields["types"], "types") if "types" in fields else ():
        if reader.scalar(item, "types") not in CONCEPT_TYPES:
            raise reader.fail(item, "types",
                              f"unknown concept type (allowed: {', '.join(CONCEPT_TYPES)})")


def _unmasked(reader: NodeReader, node: yaml.Node, token: dict[str, Any],
              masks: tuple[str, ...]) -> dict[str, Any]:
    """A pattern token with ``MASK: true`` written as the words it matches: the file's
    ``masks``, and the token's own LOWER words if it has any ("likely" or a mask)."""
    if MASK not in token:
        return token
    words = token.get("LOWER", {"IN": []})
    words = {"IN": [words]} if isinstance(words, str) else words
    if (token[MASK] is not True or set(token) - {MASK, "LOWER", "OP"}
            or not isinstance(words, dict) or set(words) != {"IN"}
            or not isinstance(words["IN"], list)):
        raise reader.fail(node, "pattern",
                          "a MASK token is {MASK: true}, with optional LOWER words and OP only")
    if not masks:
        raise reader.fail(node, "pattern", "MASK needs the file's `masks` list")
    return {"LOWER": {"IN": [*masks, *words["IN"]]},
            **{k: v for k, v in token.items() if k == "OP"}}


@lru_cache(maxsize=1)
def radiology_rules() -> RuleFile:
    """The shipped radiology rules (``data/context_radiology.yaml``), validated."""
    return parse_rule_file(_radiology_file().read_text(encoding="utf-8"),
                           f"<shipped>/{RADIOLOGY_FILE}")


def conclusion() -> Conclusion | None:
    """How the shipped rules read a report's conclusion (None: they do not)."""
    return radiology_rules().conclusion


def hedging_modifiers() -> frozenset[tuple[str, str]]:
    """The (modifier category, value) pairs that hedge a finding (the shipped rules')."""
    return radiology_rules().hedging_modifiers


def _radiology_file() -> Path:
    """Where the shipped radiology rules are."""
    return Path(str(resources.files("clinsearch.annotate") / "data" / RADIOLOGY_FILE))


def rule_cues(radiology: bool = True, cache_dir: Path | None = None) -> RuleCues:
    """``RuleCues.of(context_rule_specs(radiology))``, from the private cache when it holds a
    valid copy (``derived_cache``): a query without a cue needs the rules for nothing else."""
    return cached(
        _derived_path("cues", radiology, cache_dir),
        lambda: RuleCues.of(cached_rule_specs(radiology, cache_dir)),
        lambda cues: json.dumps(cues.to_data()).encode(),
        lambda payload: RuleCues.from_data(json.loads(payload)),
    )


def cue_words(radiology: bool = True, cache_dir: Path | None = None) -> frozenset[str]:
    """The words (``WORD``, lower case) of every rule's literal, from the private cache when it
    holds a valid copy: a query word outside them and the lexicon is unknown, and listing them
    from the rules meant reading and checking every rule."""
    return cached(
        _derived_path("cue-words", radiology, cache_dir),
        lambda: frozenset(word for spec in cached_rule_specs(radiology, cache_dir)
                          for word in WORD.findall(str(spec["literal"]).lower())),
        lambda words: json.dumps(sorted(words)).encode(),
        lambda payload: _words(json.loads(payload)),
    )


def _words(data: Any) -> frozenset[str]:
    """``data`` as a set of words if it is a list of strings, else ValueError."""
    if not isinstance(data, list) or not all(isinstance(word, str) for word in data):
        raise ValueError("not a list of words")
    return frozenset(data)


def cached_rule_specs(radiology: bool = True, cache_dir: Path | None = None
                      ) -> list[dict[str, Any]]:
    """``context_rule_specs(radiology)``, from the private cache when it holds a valid copy:
    reading the rule files validates every rule with medspaCy, a cost on every cold start."""
    return cached(
        _derived_path("rules", radiology, cache_dir),
        lambda: context_rule_specs(radiology),
        lambda specs: json.dumps(specs).encode(),
        lambda payload: _rule_specs(json.loads(payload)),
    )


def _derived_path(kind: str, radiology: bool, cache_dir: Path | None) -> Path:
    """The cache file of ``kind`` derived from the rules (``derived_cache``)."""
    key = digest([Path(__file__), context_cues, default_rules_path(), _radiology_file()])
    key.update(f"\0radiology={radiology}".encode())
    return (cache_dir or default_cache_dir()) / f"{kind}-{key.hexdigest()[:32]}.json"


# The ``ConTextRule`` arguments a stored spec may hold, with their JSON types (None: absent)
_SPEC_TYPES: dict[str, tuple[type, ...]] = {
    "literal": (str,), "category": (str,), "direction": (str,), "pattern": (list, type(None)),
    "allowed_types": (list, type(None)), "excluded_types": (list, type(None)),
    "max_scope": (int, type(None)), "max_targets": (int, type(None)),
    "terminated_by": (list, type(None)), "metadata": (dict, type(None)),
}


def _rule_specs(data: Any) -> list[dict[str, Any]]:
    """``data`` if it is a list of rule specs (a literal and a category each, only arguments
    ``ConTextRule`` takes, of their types), else ValueError: a spec ``ConTextRule`` refused
    would fail the first text a rule may match, not the cache load."""
    if not isinstance(data, list) or not all(
        isinstance(spec, dict) and isinstance(spec.get("literal"), str)
        and isinstance(spec.get("category"), str)
        and all(key in _SPEC_TYPES and isinstance(value, _SPEC_TYPES[key])
                for key, value in spec.items())
        for spec in data
    ):
        raise ValueError("not a list of ConText rule specs")
    return data


def context_rule_specs(radiology: bool = True) -> list[dict[str, Any]]:
    """medspaCy's default rules plus the radiology rules (minus the defaults those replace), as
    ``ConTextRule`` keyword arguments: their literals and patterns are enough to tell which
    rules a text may contain (``context_cues``), so ConTextRules are made only when needed."""
    rules = json.loads(default_rules_path().read_text(encoding="utf-8"))["context_rules"]
    if radiology:
        spec = radiology_rules()
        replaced = {lit.lower() for lit in spec.replace_defaults}
        rules = [d for d in rules if d["literal"].lower() not in replaced] + list(spec.rules)
        rules = [_terminated(rule, dict(spec.terminating_types)) for rule in rules]
    return [rule for spec in rules for rule in _as_literal_rules(spec)]


def _terminated(rule: dict[str, Any], terminating: dict[str, tuple[str, ...]]) -> dict[str, Any]:
    """``rule`` with the categories that end every rule of its category in its ``terminated_by``."""
    extra = terminating.get(str(rule["category"]).upper())
    if not extra:
        return rule
    return {**rule, "terminated_by": sorted({*rule.get("terminated_by", ()), *extra})}


def _as_literal_rules(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """One rule per literal phrase a token-pattern rule matches (or the rule itself if too many)."""
    pattern = spec.get("pattern")
    phrases = expand_pattern(pattern) if pattern else None
    if phrases is None:
        return [spec]
    base = {k: v for k, v in spec.items() if k not in ("pattern", "literal")}
    base["metadata"] = {**(spec.get("metadata") or {}), RULE_NAME: spec["literal"]}
    return [{"literal": phrase, **base} for phrase in phrases]


def expand_pattern(pattern: list[dict]) -> list[str] | None:
    """The phrases a token pattern of LOWER/ORTH words and lists with ``?``/``*`` matches.

    None when it uses other attributes or operators, or matches more than ``MAX_EXPANSION``.
    """
    slots: list[list[tuple[str, ...]]] = []
    for token in pattern:
        keys = set(token) - {"OP"}
        if len(keys) != 1 or keys - {"LOWER", "ORTH"}:
            return None
        value = token[next(iter(keys))]
        if isinstance(value, str):
            words = [value]
        elif isinstance(value, dict) and set(value) == {"IN"}:
            words = [str(w) for w in value["IN"]]
        else:
            return None
        op = token.get("OP")
        if op is None:
            slots.append([(w,) for w in words])
        elif op == "?":
            slots.append([(), *((w,) for w in words)])
        elif op == "*":
            slots.append([rep for n in range(MAX_REPEAT + 1) for rep in product(words, repeat=n)])
        else:
            return None
    total = 1
    for slot in slots:
        total *= len(slot)
    if total > MAX_EXPANSION:
        return None
    phrases = {" ".join(w for part in combo for w in part).lower() for combo in product(*slots)}
    return sorted(p for p in phrases if p)


def applicable(categories: Iterable[str], concept_type: str) -> list[str]:
    """The ConText categories that bear on a concept of ``concept_type``.

    A normal-limits cue rules out a finding ("engorgement is within normal limits") but says
    an anatomy mention is normal, not absent ("heart size is normal"), and is no polarity of a
    state word (the lexicon's anatomy states say what "normal" means). A mask before an
    anatomy or state word hides no finding's qualifier.
    """
    return [c for c in categories
            if not (c in (WITHIN_NORMAL, MASKED) and concept_type in ("anatomy", "state"))]


def deciding(categories: Sequence[str]) -> int | None:
    """Which of a finding's ConText categories decides its reading (the trigger shown): the
    first negation or normal statement, else the first hedge or indication, else the first
    context (history, family, hypothetical); None when nothing makes it other than present."""
    for kinds in ({NEGATED, WITHIN_NORMAL}, HEDGES | {INDICATION}, CONTEXT_FLAGS.keys()):
        for i, category in enumerate(categories):
            if category in kinds:
                return i
    return None


def rule_name(rule: ConTextRule) -> str:
    """The literal of the rule file entry a ConText rule came from (patterns are expanded into
    one rule per phrase, each remembering its entry's literal)."""
    return str((rule.metadata or {}).get(RULE_NAME, rule.literal))


def polarity_of(categories: Iterable[str]) -> str:
    """Polarity from the ConText categories modifying a finding: negation wins over uncertainty."""
    cats = set(categories)
    if NEGATED in cats or WITHIN_NORMAL in cats:
        return "absent"
    if cats & HEDGES or INDICATION in cats:
        return "uncertain"
    return "present"


def context_of(categories: Iterable[str]) -> tuple[str, ...]:
    """Context flags (sorted, unique) from the ConText categories modifying a finding."""
    return tuple(sorted({CONTEXT_FLAGS[c] for c in categories if c in CONTEXT_FLAGS}))
