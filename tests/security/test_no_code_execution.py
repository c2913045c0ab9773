"""Item 1: nothing in a load path unpickles objects, so a crafted file cannot run code."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch

from clinsearch.errors import ClinsearchError
from clinsearch.models.encoder import SentenceEncoder
from clinsearch.models.folder import check_model_folder
from clinsearch.train.loop import STATE_FILE, load_checkpoint

from ..tiny_models import build_tiny_bert


class _RunsCode:
    """Pickles to a call of os.system: loading it with full unpickling would run the command."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return os.system, (f"touch {self.marker}",)


def test_malicious_checkpoint_is_refused_without_running_code(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    path = tmp_path / STATE_FILE
    torch.save({"model": {}, "payload": _RunsCode(marker)}, path)
    with pytest.raises(ClinsearchError, match="refusing to load"):
        load_checkpoint(path)
    assert not marker.exists()


def test_plain_checkpoint_loads(tmp_path: Path) -> None:
    path = tmp_path / STATE_FILE
    state = {"model": {"w": torch.ones(2)}, "optimizer": {}, "scheduler": {"last_epoch": 3},
             "rng": torch.get_rng_state(), "step": 4, "losses": [0.5, 0.25]}
    torch.save(state, path)
    assert load_checkpoint(path)["step"] == 4


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_bert(tmp_path_factory.mktemp("tiny"))


def test_model_folder_with_pickle_weights_is_refused(tmp_path: Path, tiny: Path) -> None:
    marker = tmp_path / "pwned"
    folder = tmp_path / "model"
    shutil.copytree(tiny, folder)
    (folder / "model.safetensors").unlink()
    torch.save({"w": _RunsCode(marker)}, folder / "pytorch_model.bin")
    with pytest.raises(ClinsearchError, match=r"pickle files .*pytorch_model\.bin"):
        SentenceEncoder(folder)
    assert not marker.exists()


def test_model_folder_with_foreign_module_type_is_refused(tmp_path: Path, tiny: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(tiny, folder)
    modules = [{"idx": 0, "name": "0", "path": "", "type": "os.system"}]
    (folder / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    with pytest.raises(ClinsearchError, match="only sentence_transformers"):
        check_model_folder(folder, "encoder model")


def test_module_path_leaving_the_folder_is_refused(tmp_path: Path, tiny: Path) -> None:
    folder = tmp_path / "model"
    shutil.copytree(tiny, folder)
    modules = [{"idx": 0, "name": "0", "path": "../../elsewhere",
                "type": "sentence_transformers.models.Transformer"}]
    (folder / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    with pytest.raises(ClinsearchError, match="leaves the folder"):
        check_model_folder(folder, "encoder model")
