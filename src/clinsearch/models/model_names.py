"""Model names a user may give where a model folder is asked for: ``static`` is the default
static model (``models.static_distill``); any other value is a folder path."""

from __future__ import annotations

from pathlib import Path

from clinsearch.models.folder import check_model_folder


def named_model(path: str | Path) -> Path:
    """The folder ``path`` names: the name ``static`` (where no such folder exists) is the
    default static model, distilled from the packaged MiniLM into the derived-data cache on
    first use; any other value is a folder path."""
    from clinsearch.models.static_distill import STATIC_NAME, default_static_path

    folder = Path(path).expanduser()
    if str(path) == STATIC_NAME and not folder.exists():
        return default_static_path()
    return folder


def check_named_model(path: str | Path, what: str) -> Path:
    """``check_model_folder`` of the folder ``path`` names."""
    return check_model_folder(named_model(path), what)
