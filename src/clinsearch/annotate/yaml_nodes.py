"""Read YAML as nodes that remember their line, so validation errors can name file and line."""

from __future__ import annotations

from collections.abc import Iterable
from importlib import resources
from pathlib import Path

import yaml

from clinsearch.errors import InputError

# libyaml's loader where PyYAML has it: the same nodes, lines and values, parsed much faster
# (the shipped lexicon is parsed on every cold start).
SAFE_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def compose(text: str, file: str | Path) -> yaml.Node | None:
    """Parse ``text`` into a node tree; malformed YAML raises InputError with its line."""
    try:
        return yaml.compose(text, Loader=SAFE_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else None
        raise InputError(f"malformed YAML: {exc.problem or exc}", file=file, line=line) from None
    except yaml.YAMLError as exc:
        raise InputError(f"malformed YAML: {exc}", file=file) from None


def data_text(path: str | Path | None, package: str, shipped: str, what: str) -> tuple[str, str]:
    """The text and name of a data file: ``path``, or (None) the file ``shipped`` in
    ``package``'s ``data`` folder; an unreadable file raises InputError naming ``what``."""
    if path is None:
        resource = resources.files(package) / "data" / shipped
        return resource.read_text(encoding="utf-8"), str(resource)
    try:
        return Path(path).read_text(encoding="utf-8"), str(path)
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror}", file=path) from None


def line_of(node: yaml.Node) -> int:
    """The 1-based line a node starts on."""
    return node.start_mark.line + 1


class NodeReader:
    """Typed access to YAML nodes; every failure raises InputError naming file, line and field."""

    def __init__(self, file: str | Path) -> None:
        self.file = str(file)

    def fail(self, node: yaml.Node, field: str | None, message: str) -> InputError:
        """An InputError located at ``node``."""
        return InputError(message, file=self.file, line=line_of(node), field=field)

    def mapping(self, node: yaml.Node, field: str | None) -> dict[str, yaml.Node]:
        """A mapping node as ``{key: value node}``; duplicate keys are errors."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, field, "expected a mapping (key: value)")
        out: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            key = self.scalar(key_node, field)
            if key in out:
                raise self.fail(key_node, key, "duplicate key")
            out[key] = value_node
        return out

    def key_nodes(self, node: yaml.MappingNode) -> dict[str, yaml.Node]:
        """The key nodes of a mapping (already checked by ``mapping``), for errors about keys."""
        return {str(k.value).strip(): k for k, _ in node.value}

    def sequence(self, node: yaml.Node, field: str | None) -> list[yaml.Node]:
        """A sequence node's items."""
        if not isinstance(node, yaml.SequenceNode):
            raise self.fail(node, field, "expected a list")
        return list(node.value)

    def scalar(self, node: yaml.Node, field: str | None) -> str:
        """A scalar node's text, stripped; empty scalars are errors."""
        if not isinstance(node, yaml.ScalarNode):
            raise self.fail(node, field, "expected a single value")
        value = str(node.value).strip()
        if not value:
            raise self.fail(node, field, "must not be empty")
        return value

    def strings(self, node: yaml.Node, field: str) -> list[str]:
        """A list of scalars (a lone scalar counts as a one-item list)."""
        if isinstance(node, yaml.ScalarNode):
            return [self.scalar(node, field)]
        return [self.scalar(item, field) for item in self.sequence(node, field)]


def read_document(
    text: str, file: str | Path, what: str, keys: Iterable[str]
) -> tuple[NodeReader, yaml.MappingNode, dict[str, yaml.Node]]:
    """Parse a YAML document that must be a mapping of the known ``keys``: its reader, root
    node and top-level fields (``what`` names the document in the error for an empty file)."""
    reader = NodeReader(file)
    root = compose(text, file)
    if root is None:
        raise InputError(f"{what} file is empty", file=file, line=1)
    top = reader.mapping(root, None)
    allowed = sorted(keys)
    for key, node in reader.key_nodes(root).items():  # type: ignore[arg-type]
        if key not in allowed:
            raise reader.fail(node, key, f"unknown key (allowed: {', '.join(allowed)})")
    return reader, root, top  # type: ignore[return-value]
