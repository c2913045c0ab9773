"""The concept hierarchy of a lexicon: parents, children and their distances."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from clinsearch.annotate.lexicon import Lexicon


class Hierarchy:
    """The concept graph of a lexicon (concepts may have several parents), with BFS depths."""

    def __init__(self, parents: Mapping[str, Sequence[str]]) -> None:
        self._parents = {c: tuple(p) for c, p in parents.items()}
        children: dict[str, list[str]] = {c: [] for c in self._parents}
        for child, ps in self._parents.items():
            for p in ps:
                children.setdefault(p, []).append(child)
        self._children = {c: tuple(k) for c, k in children.items()}
        self._up: dict[str, dict[str, int]] = {}
        self._down: dict[str, dict[str, int]] = {}

    @classmethod
    def from_lexicon(cls, lexicon: Lexicon) -> Hierarchy:
        """The hierarchy of a ``Lexicon`` (its concepts' ``parents``)."""
        return cls({cid: c.parents for cid, c in lexicon.concepts.items()})

    def ancestors(self, concept: str) -> dict[str, int]:
        """The concept itself (depth 0) and every ancestor with its shortest distance."""
        if concept not in self._up:
            self._up[concept] = _bfs(concept, self._parents)
        return self._up[concept]

    def descendants(self, concept: str) -> dict[str, int]:
        """The concept itself (depth 0) and every descendant with its shortest distance."""
        if concept not in self._down:
            self._down[concept] = _bfs(concept, self._children)
        return self._down[concept]


def _bfs(start: str, edges: Mapping[str, Sequence[str]]) -> dict[str, int]:
    depth = {start: 0}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in edges.get(node, ()):
            if nxt not in depth:
                depth[nxt] = depth[node] + 1
                queue.append(nxt)
    return depth
