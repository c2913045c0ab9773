"""Item 3: a crafted manifest cannot point the index at a lexicon or model outside it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from clinsearch.errors import ClinsearchError
from clinsearch.index import IndexConfig, IndexStore
from clinsearch.index.manifest import seal_checksum
from clinsearch.trust import TRUSTED_ENV

from .hostile import one_line_error, run

MINI_LEXICON = Path(__file__).parents[1] / "search" / "data" / "mini_lexicon.yaml"


def _point(index_dir: Path, component: str, key: str, value: str) -> None:
    """Rewrite the live manifest so that ``component``'s ``key`` option names ``value``, resealed
    as an attacker with write access could (the seal detects damage, not forgery)."""
    gen = index_dir / (index_dir / "CURRENT").read_text().strip()
    manifest = json.loads((gen / "manifest.json").read_text())
    manifest.pop("checksum")
    manifest["config"]["options"].setdefault(component, {})[key] = value
    manifest["checksum"] = seal_checksum(manifest)
    (gen / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(
    ("component", "key"), [("findings", "lexicon"), ("dense", "model"),
                           ("concepts", "term_model")])
def test_a_recorded_path_outside_the_index_is_refused(index_dir: Path, tmp_path: Path,
                                                      component: str, key: str) -> None:
    secret = tmp_path / "elsewhere" / "secret.yaml"
    secret.parent.mkdir()
    secret.write_text("patient: Jane Doe, MRN 123\n")
    _point(index_dir, component, key, str(secret))
    with pytest.raises(ClinsearchError, match="outside the index and the folders you allowed"):
        IndexStore.open(index_dir)
    line = one_line_error(*run("search", index_dir, "pneumonia")[::2])
    assert "Jane Doe" not in line


def test_relative_escape_is_refused(index_dir: Path) -> None:
    _point(index_dir, "findings", "lexicon", "../../../../etc/passwd")
    with pytest.raises(ClinsearchError, match="outside the index"):
        IndexStore.open(index_dir)


def test_paths_given_at_build_stay_usable_and_trusted_dirs_allow(
    tmp_path: Path, reports: list, monkeypatch: pytest.MonkeyPatch
) -> None:
    own = tmp_path / "mine" / "lexicon.yaml"
    own.parent.mkdir()
    shutil.copy(MINI_LEXICON, own)
    config = IndexConfig(options={"findings": {"lexicon": str(own)}})
    index = IndexStore.build(reports, tmp_path / "idx", config, progress=False)
    assert IndexStore.open(index.path).config.options["findings"]["lexicon"] == str(own.resolve())
    other = tmp_path / "shared" / "lexicon.yaml"  # never given by this user
    other.parent.mkdir()
    shutil.copy(MINI_LEXICON, other)
    _point(index.path, "findings", "lexicon", str(other))
    with pytest.raises(ClinsearchError, match="outside the index"):
        IndexStore.open(index.path)
    monkeypatch.setenv(TRUSTED_ENV, str(other.parent))
    assert IndexStore.open(index.path).config.options["findings"]["lexicon"] == str(other.resolve())
