"""The manifest of a generation: format version, counts, configuration, components, segments,
file checksums, time."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from clinsearch.errors import ClinsearchError, shown
from clinsearch.index.component import Segment
from clinsearch.index.config import IndexConfig, code_name, disk_name
from clinsearch.index.tables import Counts
from clinsearch.trust import check_recorded
from clinsearch.version import __version__

MANIFEST_FILE = "manifest.json"
FORMAT = "clinsearch-index"
FORMAT_VERSION = 2  # 2: segments


@dataclass(frozen=True)
class Manifest:
    """What a generation holds; written last, so a generation with a manifest is complete."""

    generation: int
    counts: Counts
    config: IndexConfig
    components: dict[str, dict[str, Any]]
    next_report_key: int
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # path: size, sha256
    segments: tuple[Segment, ...] = ()  # in report-key order
    created: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    format: str = FORMAT
    format_version: int = FORMAT_VERSION
    clinsearch_version: str = __version__

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form."""
        return {
            "format": self.format,
            "format_version": self.format_version,
            "clinsearch_version": self.clinsearch_version,
            "generation": self.generation,
            "created": self.created,
            "counts": asdict(self.counts),
            "config": self.config.to_dict(),
            "components": {disk_name(k): v for k, v in self.components.items()},
            "next_report_key": self.next_report_key,
            "segments": [s.to_dict() for s in self.segments],
            "files": self.files,
        }

    def write(self, gen_path: Path) -> None:
        """Write ``manifest.json`` into a generation folder, sealed with its own checksum."""
        data = self.to_dict()
        data["checksum"] = seal_checksum(data)
        text = json.dumps(data, indent=2, sort_keys=False) + "\n"
        (gen_path / MANIFEST_FILE).write_text(text, encoding="utf-8")

    @classmethod
    def read(cls, gen_path: Path) -> Manifest:
        """Read and check a generation's manifest."""
        path = gen_path / MANIFEST_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ClinsearchError(f"{path}: cannot read the index manifest ({exc})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ClinsearchError(f"{path}: not a clinsearch index manifest")
        if data.get("format_version") != FORMAT_VERSION:
            raise ClinsearchError(
                f"{path}: index format version {shown(data.get('format_version'))} is not supported"
                f" (this clinsearch reads version {FORMAT_VERSION}); rebuild the index"
            )
        recorded = data.pop("checksum", None)
        if recorded != seal_checksum(data):
            raise ClinsearchError(f"{path}: the manifest is damaged (its checksum does not match)")
        try:
            return cls._from_dict(data, gen_path.parent)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ClinsearchError(
                f"{path}: the manifest is incomplete ({type(exc).__name__})"
            ) from None

    @classmethod
    def _from_dict(cls, data: dict[str, Any], root: Path) -> Manifest:
        """The manifest from its checked JSON form; recorded paths must be allowed ones (see
        ``clinsearch.trust``) for the index at ``root``."""
        return cls(
            generation=data["generation"],
            counts=Counts(**data["counts"]),
            config=IndexConfig.from_dict(data["config"]).with_paths(
                lambda value, what: check_recorded(value, root, what)
            ),
            components={code_name(k): v for k, v in data["components"].items()},
            next_report_key=data["next_report_key"],
            files=data["files"],
            segments=tuple(Segment(**s) for s in data["segments"]),
            created=data["created"],
            clinsearch_version=data["clinsearch_version"],
        )


def seal_checksum(data: dict[str, Any]) -> str:
    """SHA-256 of the manifest's content in a canonical JSON form."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return "sha256:" + hashlib.sha256(canonical.encode("ascii")).hexdigest()
