"""What every route shares: the live index, the users (None: no authentication), the audit log
and the hits kept for paging."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinsearch.hit import Hit
from clinsearch.server.audit import AuditLog
from clinsearch.server.audit_index import AuditIndex
from clinsearch.server.auth import UserStore
from clinsearch.server.live import LiveIndex
from clinsearch.server.review_store import ReviewStore
from clinsearch.server.small_counts import noise_key
from clinsearch.server.workbench_store import WorkbenchStore

HITS_CACHE = 256  # queries whose hits are kept for paging
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
MAX_BODY = 1 << 20  # bytes of a request body (a cohort query or a text to annotate)
VIEWER_MIN_COUNT = 10


@dataclass(frozen=True)
class ServerConfig:
    """What the administrator set: the host names the server answers to (DNS rebinding), the
    model folders clients may name (by folder name), the smallest count viewers see, and the
    request size limits."""

    allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES
    models: dict[str, Path] = field(default_factory=dict)
    viewer_min_count: int = VIEWER_MIN_COUNT
    max_body: int = MAX_BODY


@dataclass
class ServerState:
    """The live index, the users (None: no auth), the audit log and its viewer's index, the
    users' workbench (bundles, lists, saved searches, history, chart reviews), the configuration
    and the paging cache."""

    live: LiveIndex
    users: UserStore | None
    audit: AuditLog
    workbench: WorkbenchStore
    config: ServerConfig = field(default_factory=ServerConfig)
    hits_cache: OrderedDict[tuple[Any, ...], list[Hit]] = field(default_factory=OrderedDict)
    cache_lock: threading.Lock = field(default_factory=threading.Lock)
    audit_index: AuditIndex = field(init=False)
    reviews: ReviewStore = field(init=False)  # chart reviews, in the workbench's file

    def __post_init__(self) -> None:
        self.audit_index = AuditIndex(self.audit.path)
        self.reviews = ReviewStore(self.workbench.path)

    def cached_hits(self, key: tuple[Any, ...]) -> list[Hit] | None:
        """The hits computed for ``key`` (generation, query, method, level, options), if kept."""
        with self.cache_lock:
            return self.hits_cache.get(key)

    def cache_hits(self, key: tuple[Any, ...], hits: list[Hit]) -> None:
        """Keep ``hits`` for paging (the last HITS_CACHE queries)."""
        with self.cache_lock:
            self.hits_cache[key] = hits
            while len(self.hits_cache) > HITS_CACHE:
                self.hits_cache.popitem(last=False)

    @property
    def count_key(self) -> bytes:
        """The key of the viewer counts' offsets (``small_counts``), from the audit key."""
        return noise_key(self.audit.key)

    def reload_users(self) -> None:
        """Reread the users file when it changed (users added or removed while serving)."""
        if self.users is None:
            return
        path = self.users.path
        mtime = path.stat().st_mtime_ns if path.exists() else 0
        if mtime != self.users.mtime:
            self.users = UserStore(path)
