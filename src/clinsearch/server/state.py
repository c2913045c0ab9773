"""What every route shares: the live index, the users (None: no authentication), the audit log
and the hits kept for paging."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clinsearch.search.retriever import RankedUnits
from clinsearch.server.audit import AuditLog
from clinsearch.server.audit_index import AuditIndex
from clinsearch.server.auth import UserStore
from clinsearch.server.live import LiveIndex
from clinsearch.server.review_store import ReviewStore
from clinsearch.server.small_counts import noise_key
from clinsearch.server.workbench_store import WorkbenchStore

RANKINGS_CACHE = 32  # queries whose rankings are kept for paging (each holds its candidates)
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
    rankings: OrderedDict[tuple[Any, ...], RankedUnits] = field(default_factory=OrderedDict)
    cache_lock: threading.Lock = field(default_factory=threading.Lock)
    audit_index: AuditIndex = field(init=False)
    reviews: ReviewStore = field(init=False)  # chart reviews, in the workbench's file

    def __post_init__(self) -> None:
        self.audit_index = AuditIndex(self.audit.path)
        self.reviews = ReviewStore(self.workbench.path)

    def cached_ranking(self, key: tuple[Any, ...]) -> RankedUnits | None:
        """The ranking computed for ``key`` (generation, query, method, level, options, depth),
        if kept."""
        with self.cache_lock:
            return self.rankings.get(key)

    def cache_ranking(self, key: tuple[Any, ...], ranking: RankedUnits) -> None:
        """Keep ``ranking`` for paging (the last RANKINGS_CACHE queries)."""
        with self.cache_lock:
            self.rankings[key] = ranking
            while len(self.rankings) > RANKINGS_CACHE:
                self.rankings.popitem(last=False)

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
