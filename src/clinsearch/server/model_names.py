"""Model folders over HTTP: a client names a model the administrator allowed (``serve
--allow-model FOLDER``) by the folder's name, never by a path, so no request makes the server
look at a folder of the client's choosing (which would answer whether it exists and what it
holds). Without an option the method uses the index's own models, as the CLI does."""

from __future__ import annotations

from pathlib import Path

from clinsearch.errors import ClinsearchError
from clinsearch.search.method_spec import MethodSpec
from clinsearch.search.registry import params_of


def allowed_models(folders: list[Path]) -> dict[str, Path]:
    """The allowed folders by name; two folders with one name are an error."""
    named: dict[str, Path] = {}
    for folder in folders:
        name = folder.resolve().name
        if name in named and named[name] != folder.resolve():
            raise ClinsearchError(f"two allowed model folders are named {name!r}; allow one")
        named[name] = folder.resolve()
    return named


def with_allowed_models(spec: MethodSpec, models: dict[str, Path]) -> MethodSpec:
    """``spec`` with each model option's name replaced by its allowed folder; any other value
    is refused without touching the file system."""
    paths = {p.name for p in params_of(spec.method) or () if p.kind == "path"}
    chosen = {}
    for option in paths & spec.options.keys():
        name = str(spec.options[option])
        if name not in models:
            allowed = ", ".join(sorted(models)) or "none: the index's own models only"
            raise ClinsearchError(f"method option {option!r} names a model this server does"
                                  f" not offer; models offered: {allowed}")
        chosen[option] = str(models[name])
    return spec.with_options(**chosen)
