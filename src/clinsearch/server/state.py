"""What every route shares: the live index, the users (None: no authentication), the audit log
and the hits kept for paging."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from clinsearch.hit import Hit
from clinsearch.server.audit import AuditLog
from clinsearch.server.auth import UserStore
from clinsearch.server.live import LiveIndex
from clinsearch.server.workbench_store import WorkbenchStore

HITS_CACHE = 256  # queries whose hits are kept for paging


@dataclass
class ServerState:
    """The live index, the users (None: no auth), the audit log, the users' workbench (bundles,
    lists, saved searches, history) and the paging cache."""

    live: LiveIndex
    users: UserStore | None
    audit: AuditLog
    workbench: WorkbenchStore
    hits_cache: OrderedDict[tuple[Any, ...], list[Hit]] = field(default_factory=OrderedDict)
    cache_lock: threading.Lock = field(default_factory=threading.Lock)

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

    def reload_users(self) -> None:
        """Reread the users file when it changed (users added or removed while serving)."""
        if self.users is None:
            return
        path = self.users.path
        mtime = path.stat().st_mtime_ns if path.exists() else 0
        if mtime != self.users.mtime:
            self.users = UserStore(path)
