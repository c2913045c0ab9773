"""Index configuration and the registry of index components.

A new component (e.g. ``findings``, ``dense``) registers its factory in ``COMPONENTS`` and, if
it should be built by default, its name in ``DEFAULT_COMPONENTS``; nothing else changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from clinsearch.errors import ClinsearchError
from clinsearch.index.bm25 import FOLDER as BM25_FOLDER
from clinsearch.index.bm25 import NAME as BM25
from clinsearch.index.bm25 import BM25Component
from clinsearch.index.component import Component
from clinsearch.index.concept_postings import ConceptComponent
from clinsearch.index.dense import DenseComponent
from clinsearch.index.findings import FindingsComponent

ComponentFactory = Callable[[Mapping[str, Any]], Component]

COMPONENTS: dict[str, ComponentFactory] = {
    "bm25": BM25Component,
    "concepts": ConceptComponent,
    "dense": DenseComponent,
    "findings": FindingsComponent,
}
DEFAULT_COMPONENTS: tuple[str, ...] = ("bm25", "findings", "concepts")
# The BM25 component is written under its first name (folder, manifest keys), so that existing
# indexes open; ``disk_name`` and ``code_name`` translate at the manifest.
_DISK_NAMES = {BM25: BM25_FOLDER}
_CODE_NAMES = {disk: name for name, disk in _DISK_NAMES.items()}
MAX_SEGMENT_REPORTS = 100_000
MERGE_FACTOR = 10
# Options that name a file or folder outside the index (checked by clinsearch.trust).
PATH_OPTIONS: dict[str, tuple[str, ...]] = {
    "findings": ("lexicon",),
    "concepts": ("lexicon", "term_model"),
    "dense": ("model",),
}
MODEL_OPTIONS = {("dense", "model"), ("concepts", "term_model")}  # may name a model (``static``)


@dataclass(frozen=True)
class IndexConfig:
    """Which components an index holds and each one's options (kept in the manifest)."""

    components: tuple[str, ...] = DEFAULT_COMPONENTS
    options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    max_segment_reports: int = MAX_SEGMENT_REPORTS  # most reports a build writes into one segment
    merge_factor: int = MERGE_FACTOR  # this many segments of one size tier are merged

    def __post_init__(self) -> None:
        if self.max_segment_reports < 1 or self.merge_factor < 2:
            raise ClinsearchError(
                "max_segment_reports must be at least 1 and merge_factor at least 2"
            )
        unknown = [name for name in (*self.components, *self.options) if name not in COMPONENTS]
        if unknown:
            raise ClinsearchError(
                f"unknown index component {unknown[0]!r}; known: {', '.join(COMPONENTS)}"
            )
        if "bm25" not in self.components:
            raise ClinsearchError("the 'bm25' component is required")
        if "concepts" in self.components and (
            "findings" not in self.components
            or self.components.index("findings") > self.components.index("concepts")
        ):
            raise ClinsearchError("the 'concepts' component needs 'findings' before it")
        lexicon = self.options.get("findings", {}).get("lexicon")
        if lexicon and "lexicon" not in self.options.get("concepts", {}):
            # the concept hierarchy must come from the lexicon the findings were extracted with
            options = {**self.options, "concepts": {**self.options.get("concepts", {}),
                                                    "lexicon": lexicon}}
            object.__setattr__(self, "options", options)

    def with_paths(self, resolve: Callable[[str, str], str]) -> IndexConfig:
        """This configuration with each path option replaced by ``resolve(value, what)``."""
        options = {name: dict(values) for name, values in self.options.items()}
        for name, keys in PATH_OPTIONS.items():
            for key in keys:
                value = options.get(name, {}).get(key)
                if value and (name, key) in MODEL_OPTIONS:
                    from clinsearch.models.model_names import named_model

                    value = named_model(str(value))
                if value:
                    options[name][key] = resolve(str(value), f"{name} {key.replace('_', ' ')}")
        return replace(self, options=options)

    def make(self) -> list[Component]:
        """Instantiate the configured components, in order."""
        return [COMPONENTS[name](self.options.get(name, {})) for name in self.components]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form for the manifest."""
        return {
            "components": [disk_name(c) for c in self.components],
            "options": {disk_name(k): dict(v) for k, v in self.options.items()},
            "segments": {"reports": self.max_segment_reports, "merge_factor": self.merge_factor},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> IndexConfig:
        """Read back what ``to_dict`` wrote."""
        segments = data.get("segments", {})
        options = {code_name(k): v for k, v in data.get("options", {}).items()}
        return cls(components=tuple(code_name(c) for c in data["components"]), options=options,
                   max_segment_reports=int(segments.get("reports", MAX_SEGMENT_REPORTS)),
                   merge_factor=int(segments.get("merge_factor", MERGE_FACTOR)))


def disk_name(component: str) -> str:
    """The name ``component`` is written under in a generation (folder, manifest keys)."""
    return _DISK_NAMES.get(component, component)


def code_name(written: str) -> str:
    """The component a name written in a manifest stands for (the inverse of ``disk_name``)."""
    return _CODE_NAMES.get(written, written)
