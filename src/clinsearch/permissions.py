"""Who may read what clinsearch writes: private files (0600) and folders (0700) by default.

An index, an export or a model trained on reports holds patient data, so everything is created
readable by its owner only. ``CLINSEARCH_UMASK`` (octal, e.g. ``027`` to let the group read)
changes the policy for every file clinsearch writes.
"""

from __future__ import annotations

import os
from pathlib import Path

from clinsearch.errors import ClinsearchError

UMASK_ENV = "CLINSEARCH_UMASK"
DEFAULT_UMASK = 0o077


def policy_umask() -> int:
    """The umask of the policy: ``$CLINSEARCH_UMASK`` (octal) or 077."""
    value = os.environ.get(UMASK_ENV, "").strip()
    if not value:
        return DEFAULT_UMASK
    try:
        mask = int(value, 8)
    except ValueError:
        raise ClinsearchError(f"{UMASK_ENV}={value!r} is not an octal umask such as 077") from None
    if not 0 <= mask <= 0o777:
        raise ClinsearchError(f"{UMASK_ENV}={value!r} is not an octal umask such as 077")
    return mask


def file_mode() -> int:
    """Mode of a new file under the policy (0600 by default)."""
    return 0o666 & ~policy_umask()


def dir_mode() -> int:
    """Mode of a new folder under the policy (0700 by default)."""
    return 0o777 & ~policy_umask()


def apply_process_umask() -> None:
    """Make the policy the process umask, so files written by libraries (tantivy, FAISS,
    Parquet) are private from the start; the command line calls this once."""
    os.umask(policy_umask())


def make_private(root: Path) -> None:
    """Set the policy's modes on ``root`` and everything under it (symlinks are left alone)."""
    files, dirs = file_mode(), dir_mode()
    os.chmod(root, dirs)
    for folder, subdirs, names in os.walk(root):
        for name in subdirs:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, dirs)
        for name in names:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                os.chmod(path, files)
