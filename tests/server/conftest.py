"""Service fixtures: the sample corpus indexed once, users made with the CLI, and one real
``clinsearch serve`` (uvicorn on 127.0.0.1, tokens on) shared by the API and browser tests."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from clinsearch import Index
from clinsearch.corpus.readers import read_reports
from clinsearch.corpus.sample import SAMPLE_FORMAT, sample_reports_path

PURPOSE = "test: service checks"


@dataclass
class CliResult:
    """What a CLI command did: exit status and its two output streams."""

    returncode: int
    stdout: str
    stderr: str


def clinsearch(*args: str, check: bool = True) -> CliResult:
    """Run the real CLI in-process (its models are then loaded once per test session)."""
    from typer.testing import CliRunner

    from clinsearch.cli import app

    result = CliRunner().invoke(app, list(args))
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    done = CliResult(result.exit_code, result.stdout, result.stderr)
    if check and done.returncode:
        raise AssertionError(f"clinsearch {' '.join(args)} exited {done.returncode}: {done.stderr}")
    return done


@dataclass
class Response:
    """An HTTP answer: status, headers and body (JSON decoded when it is JSON)."""

    status: int
    headers: dict[str, str]
    text: str

    def json(self) -> Any:
        return json.loads(self.text)


@dataclass
class Server:
    """A running ``clinsearch serve``: where it listens, its files, and the users' tokens."""

    base: str
    index: Path
    audit: Path
    users: Path
    log: Path
    tokens: dict[str, str]

    def call(self, method: str, path: str, *, role: str | None = "researcher",
             purpose: str | None = PURPOSE, params: dict[str, Any] | None = None,
             body: Any = None, token: str | None = None) -> Response:
        """One HTTP request as user ``role`` (None: no token) stating ``purpose``."""
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        headers = {}
        if token or role:
            headers["Authorization"] = f"Bearer {token or self.tokens[role or '']}"
        if purpose:
            headers["X-Purpose"] = purpose
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(url, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return Response(answer.status, dict(answer.headers), answer.read().decode())
        except urllib.error.HTTPError as exc:
            return Response(exc.code, dict(exc.headers), exc.read().decode())

    def wait_warm(self, role: str | None = "researcher", timeout: float = 180) -> None:
        """Wait until the server has warmed what it warms in the background (``/api/info``
        no longer says ``warming``)."""
        deadline = time.monotonic() + timeout
        while self.call("GET", "/api/info", role=role).json()["warming"]:
            if time.monotonic() > deadline:
                pytest.fail(f"clinsearch serve still warming after {timeout:.0f} s")
            time.sleep(0.2)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The synthetic sample corpus (dates, types, negations) indexed once."""
    path = tmp_path_factory.mktemp("serve") / "index"
    Index.build(read_reports(sample_reports_path(), SAMPLE_FORMAT), path, progress=False)
    return path


@pytest.fixture(scope="session")
def server(sample_index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``clinsearch serve`` over the sample index with three users, until the session ends."""
    home = tmp_path_factory.mktemp("server")
    users = home / "users.json"
    tokens = {}
    for role in ("viewer", "researcher", "admin"):
        tokens[role] = clinsearch("users", "add", f"{role}1", "--role", role,
                                  "--users", str(users)).stdout.strip()
    with serving(sample_index, home / "audit.jsonl", home / "server.log",
                 users=users, tokens=tokens) as started:
        yield started


@contextmanager
def serving(index: Path, audit: Path, log: Path, *, users: Path | None = None,
            tokens: dict[str, str] | None = None, options: tuple[str, ...] = ()
            ) -> Iterator[Server]:
    """A real ``clinsearch serve`` over ``index`` (tokens from ``users``; without users
    ``--no-auth``, on loopback; more ``options`` for serve) until the block ends."""
    port = free_port()
    auth = ["--users", str(users)] if users is not None else ["--no-auth"]
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "clinsearch", "serve", str(index), "--port", str(port),
             *auth, "--audit-log", str(audit), *options],
            stdout=out, stderr=subprocess.STDOUT, env=os.environ | {"COLUMNS": "200"},
        )
    started = Server(f"http://127.0.0.1:{port}", index, audit, users or Path(), log,
                     tokens or {})
    try:
        deadline = time.monotonic() + 180
        while True:
            if process.poll() is not None:
                pytest.fail(f"clinsearch serve exited: {log.read_text()[-2000:]}")
            try:
                if started.call("GET", "/api/session", role=None).status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("clinsearch serve did not start within 180 s")
            time.sleep(0.3)
        yield started
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def downloads(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the module's browser saves downloads."""
    return tmp_path_factory.mktemp("downloads")


@pytest.fixture(scope="module")
def browser(downloads: Path) -> Iterator[Any]:
    """A real headless Chromium (Debian's ``chromium`` and ``chromedriver``) through Selenium,
    one per test module, saving downloads into ``downloads``."""
    from ..conftest import require_system

    webdriver = pytest.importorskip("selenium.webdriver")
    chromium, driver = require_system("chromium", "chromedriver")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                "--window-size=1280,1000", "--force-device-scale-factor=1"):
        options.add_argument(arg)
    options.add_experimental_option("prefs", {"download.default_directory": str(downloads),
                                              "download.prompt_for_download": False})
    chrome = webdriver.Chrome(options=options, service=webdriver.ChromeService(driver))
    chrome.execute_cdp_cmd("Page.setDownloadBehavior",
                           {"behavior": "allow", "downloadPath": str(downloads)})
    try:
        yield chrome
    finally:
        chrome.quit()


def shoot(browser: Any, name: str, tmp: Path) -> None:
    """Save a screenshot (into $CLINSEARCH_SCREENSHOTS when set)."""
    folder = Path(os.environ.get("CLINSEARCH_SCREENSHOTS") or tmp)
    folder.mkdir(parents=True, exist_ok=True)
    browser.execute_script("window.scrollTo(0, 0)")
    assert browser.save_screenshot(str(folder / name))


def wait(browser: Any, condition: Any, timeout: float = 60) -> Any:
    """Wait until ``condition`` (a Selenium expected condition) holds, and return its value."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(browser, timeout).until(condition)


def downloaded(folder: Path, name: str, timeout: float = 30) -> Path:
    """The file ``name`` once the browser has saved it into ``folder``."""
    target = folder / name
    deadline = time.monotonic() + timeout
    while not target.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert target.exists(), f"{name} was not downloaded"
    return target
