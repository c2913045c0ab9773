"""Sharing immutable files between generations: a new generation hard-links the files of the
previous one it keeps, so a commit writes only what changed (Lucene's segment files idea).

A linked file is the same inode in both folders; nothing ever writes into a file in place
(writers replace by rename), so removing or replacing a name in one generation never changes
another. Where the file system has no hard links, the file is copied.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

_NO_LINKS = {errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP, errno.EOPNOTSUPP}


def link_file(src: Path, dst: Path) -> None:
    """Make ``dst`` a hard link to ``src`` (a copy where links are not possible)."""
    try:
        os.link(src, dst)
    except OSError as exc:
        if exc.errno not in _NO_LINKS:
            raise
        shutil.copy2(src, dst)


def link_tree(src: Path, dst: Path, skip: frozenset[str] = frozenset()) -> None:
    """Recreate the folder tree ``src`` at ``dst`` (new folders) with every file hard-linked;
    names in ``skip`` (at any depth) are left out."""
    shutil.copytree(src, dst, copy_function=lambda s, d: link_file(Path(s), Path(d)),
                    ignore=lambda _, names: [n for n in names if n in skip])
