"""Chart review in a real headless Chromium: a researcher draws a sample of 10 members of a
saved cohort (and 3 non-members for recall), judges them blind; a second reviewer does the same
without seeing the first one's verdicts; the owner settles the disagreements; the page's
precision, Wilson interval and kappa equal what ``clinsearch review show`` prints for the same
store, the cohort export the page downloads carries them in its header, and a listed viewer
sees the figures only.

Set ``CLINSEARCH_SCREENSHOTS=docs/images`` to refresh the how-to's screenshot.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from clinsearch.search.cohort import Cohort
from clinsearch.server.workbench_store import WORKBENCH_FILE

from .conftest import Server, clinsearch, downloaded, shoot, wait

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402

QUERY = "pneumonia"
NOTE = '<img src=x onerror="document.title=1">hedge'


def sign_in(browser: webdriver.Chrome, server: Server, role: str) -> None:
    browser.get(server.base + "/")
    browser.execute_script("sessionStorage.clear()")
    browser.get(server.base + "/")
    wait(browser, ec.visibility_of_element_located((By.ID, "token"))).send_keys(
        server.tokens[role])
    browser.find_element(By.ID, "purpose").send_keys("chart review checks" + Keys.ENTER)
    wait(browser, ec.visibility_of_element_located((By.ID, "q")))
    browser.find_element(By.ID, "tab-review").click()
    wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "#review-list table")))


def open_review(browser: webdriver.Chrome, review_id: str) -> None:
    browser.find_element(By.CSS_SELECTOR, f'#review-list tr[data-review="{review_id}"] button'
                         ).click()
    wait(browser, lambda b: b.find_element(By.ID, "review-view").get_attribute(
        "data-review") == review_id and b.find_elements(By.CSS_SELECTOR, "#review-items li"))


def items(browser: webdriver.Chrome) -> list[tuple[str, str]]:
    """The sampled reports listed, with the verdict each shows (read in one go: the list is
    redrawn as the reviewer moves on)."""
    return [tuple(pair) for pair in browser.execute_script(
        "return [...document.querySelectorAll('#review-items button')]"
        ".map((b) => [b.dataset.report, b.dataset.verdict])")]


def judge_all(browser: webdriver.Chrome, verdict_of: dict[str, str], note_on: str = "") -> None:
    """Read each sampled report in turn and give it its verdict (the page moves on)."""
    browser.find_elements(By.CSS_SELECTOR, "#review-items button")[0].click()
    for _ in range(len(verdict_of)):
        heading = wait(browser, ec.visibility_of_element_located(
            (By.CSS_SELECTOR, "#review-reader h3")))
        report = heading.text.split()[1]
        reader = browser.find_element(By.ID, "review-reader")
        assert reader.find_elements(By.CSS_SELECTOR, ".hl")  # the finding is marked
        # blind: nothing of the engine's reading (polarity classes, triggers, cues)
        assert not reader.find_elements(By.CSS_SELECTOR, "[class*='f-'], .cue, .trigger")
        if report == note_on:
            browser.find_element(By.ID, "review-note").send_keys(NOTE)
        browser.find_element(By.ID, "verdict-" + verdict_of[report]).click()
        wait(browser, lambda b, r=report: dict(items(b))[r] == verdict_of[r])
    wait(browser, ec.presence_of_element_located((By.ID, "review-done")))


def cli_figures(server: Server, review_id: str) -> dict[str, str]:
    """The precision, interval and kappa as ``clinsearch review show`` prints them."""
    out = clinsearch("review", "show", review_id, "--workbench",
                     str(server.audit.parent / WORKBENCH_FILE)).stdout
    precision = re.search(r"^precision: (\S+) \(.*Wilson 95% (\S+)\)$", out, re.M)
    kappa = re.search(r"^kappa: (\S+) ", out, re.M)
    assert precision and kappa, out
    return {"precision": precision[1], "interval": precision[2], "kappa": kappa[1]}


def page_figures(browser: webdriver.Chrome) -> dict[str, str]:
    return {name: browser.find_element(By.ID, "rv-" + name).text
            for name in ("precision", "interval", "kappa")}


def test_two_reviewers_judge_a_sample_blind_and_the_page_shows_the_clis_figures(
        browser: webdriver.Chrome, server: Server, downloads: Path, tmp_path: Path) -> None:
    saved = server.call("POST", "/api/saved", body={
        "name": "Pneumonia reports", "kind": "cohort",
        "state": {"query": QUERY, "level": "report"}}).json()
    sign_in(browser, server, "researcher")
    Select(browser.find_element(By.ID, "review-saved")).select_by_value(str(saved["id"]))
    size = browser.find_element(By.ID, "review-size")
    size.clear()
    size.send_keys("10")
    nonmembers = browser.find_element(By.ID, "review-nonmembers")
    nonmembers.clear()
    nonmembers.send_keys("3")
    browser.find_element(By.ID, "review-reviewers").send_keys("admin1, viewer1")
    browser.find_element(By.ID, "review-second").click()
    browser.find_element(By.CSS_SELECTOR, "#review-form button[type=submit]").click()
    wait(browser, lambda b: len(items(b)) == 13)
    review_id = browser.find_element(By.ID, "review-view").get_attribute("data-review")
    sample = [report for report, _ in items(browser)]
    members = {m.report_id for m in Cohort(server.index).members(QUERY, "report")}
    assert len(set(sample) & members) == 10
    counts = Cohort(server.index).counts(QUERY)
    assert [browser.find_element(By.ID, f"rv-{u}").text for u in ("patient", "visit", "report")
            ] == [str(counts[u]) for u in ("patient", "visit", "report")]

    first = {r: "does_not_meet" if n % 4 == 0 else "meets" for n, r in enumerate(sample)}
    second = {r: "does_not_meet" if n % 3 == 0 else "meets" for n, r in enumerate(sample)}
    noted = next(r for r in sample if r in members and first[r] == "does_not_meet")
    judge_all(browser, first, note_on=noted)

    # the second reviewer: the same sample, none of the first reviewer's verdicts shown
    sign_in(browser, server, "admin")
    open_review(browser, review_id)
    assert items(browser) == [(report, "") for report in sample]
    assert not browser.find_element(By.ID, "review-owner").is_displayed()
    judge_all(browser, second)

    # the owner: disagreements listed, settled on the page; the figures equal the CLI's
    sign_in(browser, server, "researcher")
    open_review(browser, review_id)
    assert page_figures(browser) == cli_figures(server, review_id)
    disputed = {r for r in sample if first[r] != second[r]}
    rows = browser.find_elements(By.CSS_SELECTOR, "#review-disagreements tbody tr")
    assert {row.get_attribute("data-report") for row in rows} == disputed
    for _ in disputed:
        left = len(browser.find_elements(By.CSS_SELECTOR, "#review-disagreements tbody tr"))
        browser.find_element(By.CSS_SELECTOR,  # settled as "does not meet"
                             "#review-disagreements tbody tr button:nth-child(2)").click()
        wait(browser, lambda b, n=left: len(b.find_elements(
            By.CSS_SELECTOR, "#review-disagreements tbody tr")) == n - 1)
    shown = page_figures(browser)
    assert shown == cli_figures(server, review_id)
    assert shown["kappa"] != "n/a" and shown["precision"] != "n/a"

    # rejected members: their evidence and trigger; the injected note shown as text
    rejected = {row.get_attribute("data-report"): row for row in browser.find_elements(
        By.CSS_SELECTOR, "#review-rejected tbody tr")}
    assert noted in rejected
    reason = rejected[noted].find_element(By.CSS_SELECTOR, ".reason")
    assert NOTE in reason.text and not reason.find_elements(By.TAG_NAME, "img")
    assert browser.title == "clinsearch"
    assert browser.find_element(By.CSS_SELECTOR, f'#review-list tr[data-review="{review_id}"]'
                                " td.precision").text == shown["precision"]
    browser.find_elements(By.CSS_SELECTOR, "#review-items button")[1].click()
    wait(browser, ec.visibility_of_element_located((By.CSS_SELECTOR, "#review-reader .hl")))
    shoot(browser, "screenshot-review.png", tmp_path)

    # the export carries the review's figures in its header
    browser.find_element(By.ID, "review-export").click()
    exported = downloaded(downloads, f"review-{review_id}-pneumonia-"
                          f"{datetime.now(UTC):%Y%m%d}.csv")
    header = [line for line in exported.read_text().splitlines() if line.startswith("# ")]
    assert f"# cohort definition: {QUERY}; level report" in header
    assert any(line.startswith(f"# precision: {shown['precision']} ") and
               f"Wilson 95% {shown['interval']})" in line for line in header)
    assert any(line.startswith(f"# kappa: {shown['kappa']} ") for line in header)

    # a listed viewer: the figures only, no sample, no form to draw one
    sign_in(browser, server, "viewer")
    assert not browser.find_element(By.ID, "review-form").is_displayed()
    browser.find_element(By.CSS_SELECTOR, f'#review-list tr[data-review="{review_id}"] button'
                         ).click()
    wait(browser, lambda b: b.find_element(By.ID, "rv-precision").text == shown["precision"])
    assert page_figures(browser) == shown
    assert items(browser) == [] and not browser.find_element(By.ID, "review-owner").is_displayed()
