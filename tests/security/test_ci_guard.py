"""A test that needs a system program (Debian's chromium, chromedriver, Java) skips where it is
missing, but fails in CI: ``make test`` installs them there, so a skip would hide a broken
install."""

from __future__ import annotations

import shutil

import pytest

from ..conftest import require_system

MISSING = "clinsearch-no-such-program"


def test_a_missing_program_skips_outside_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in (None, "", "false", "0"):
        if value is None:
            monkeypatch.delenv("CI", raising=False)
        else:
            monkeypatch.setenv("CI", value)
        with pytest.raises(pytest.skip.Exception, match=MISSING):
            require_system("sh", MISSING)


def test_a_missing_program_fails_in_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in ("true", "1", "yes"):
        monkeypatch.setenv("CI", value)
        with pytest.raises(pytest.fail.Exception, match=f"CI is set but {MISSING}"):
            require_system(MISSING)


def test_present_programs_give_their_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI", "true")
    assert require_system("sh") == [shutil.which("sh")]


def test_the_browser_and_spark_tests_use_the_guard() -> None:
    """The guard is the one way these tests look for their programs (no skip of their own)."""
    from pathlib import Path

    tests = Path(__file__).parents[1]
    for path, commands in ((tests / "server" / "conftest.py", '"chromium", "chromedriver"'),
                           (tests / "spark" / "conftest.py", '"java"')):
        source = path.read_text(encoding="utf-8")
        assert f"require_system({commands})" in source, path
        assert "shutil.which" not in source and "pytest.skip(" not in source, path
