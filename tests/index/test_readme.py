"""The README's Python example runs as written and prints what it says (the examples in docs/
run in tests/test_docs.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).parents[2] / "README.md"


def test_readme_index_example(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    example = next(b for b in blocks if "from clinsearch import Index" in b)
    monkeypatch.chdir(tmp_path)
    exec(compile(example, str(README), "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("Counts(reports=185")
    assert out[1].startswith("1 P0") and "pneumonia" in out[1]
    assert out[-1] == "184"
