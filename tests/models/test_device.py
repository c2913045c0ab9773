"""The device resolver: auto|cpu|cuda[:N] to a device with its batch size and precision."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from clinsearch.errors import InputError
from clinsearch.models.device import DEVICE_ENV, resolve_device, use_device
from clinsearch.models.encoder import SentenceEncoder


@pytest.fixture(autouse=True)
def _process_choice_restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(DEVICE_ENV, raising=False)
    yield
    use_device(None)


def test_cpu_is_fp32_with_cpu_batches() -> None:
    cpu = resolve_device("cpu")
    assert (cpu.name, cpu.is_gpu, cpu.inference_dtype, cpu.train_dtype) == (
        "cpu", False, "float32", "float32")
    assert cpu.encode_batch == 64 and cpu.score_batch == 32


def test_auto_takes_a_gpu_only_when_torch_sees_one() -> None:
    expected = "cuda:0" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").name == expected
    assert resolve_device(None).name == expected  # no choice made: auto


def test_environment_and_process_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DEVICE_ENV, "CPU")
    assert resolve_device(None).name == "cpu"
    monkeypatch.setenv(DEVICE_ENV, "tpu")
    with pytest.raises(InputError, match="unknown device 'tpu'"):
        resolve_device(None)
    use_device("cpu")  # the process-wide choice wins over the environment
    assert resolve_device(None).name == "cpu"


@pytest.mark.parametrize("spec", ["tpu", "cpu:0", "auto:1", "cuda:x", "cuda:-1", ""])
def test_unknown_names_are_refused(spec: str) -> None:
    with pytest.raises(InputError, match="field '--device': unknown device") as caught:
        resolve_device(spec or " ")
    assert "\n" not in str(caught.value)


def test_a_gpu_torch_cannot_see_is_refused() -> None:
    beyond = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(InputError, match=f"device 'cuda:{beyond}' is not available"):
        resolve_device(f"cuda:{beyond}")
    with pytest.raises(InputError, match="not available"):
        use_device(f"cuda:{beyond}")
    assert resolve_device(None).name == resolve_device("auto").name  # the failed choice left none


def test_explicit_cpu_encodes_as_before(tiny_encoder_dir: Path) -> None:
    texts = ["no pleural effusion", "mild cardiomegaly", "no pleural effusion"]
    default = SentenceEncoder(tiny_encoder_dir)
    cpu = SentenceEncoder(tiny_encoder_dir, device="cpu")
    assert cpu.device.name == "cpu" and cpu.model.device.type == "cpu"
    assert next(cpu.model.parameters()).dtype == torch.float32
    one_by_one = np.vstack([cpu.encode_queries([t], batch_size=1) for t in texts])
    np.testing.assert_allclose(cpu.encode_queries(texts), one_by_one, atol=1e-6)
    if not torch.cuda.is_available():
        np.testing.assert_array_equal(default.encode_queries(texts), cpu.encode_queries(texts))
