"""The web page in a real headless Chromium (Debian's ``chromium`` and ``chromedriver``, driven
by Selenium): log in, search "no pneumothorax", check the denials are marked as negated, open a
report, build a cohort and download its CSV, compare it with ``clinsearch cohort --export``.

Set ``CLINSEARCH_SCREENSHOTS=docs/images`` to refresh the screenshots in README and docs.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from clinsearch.search.cohort import Cohort

from .conftest import Server, clinsearch, shoot, wait

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402

PURPOSE = "Prüfung: browser checks → audit"  # not Latin-1: sent percent-encoded
COHORT_QUERY = 'pneumonia AND NOT "pleural effusion"'


def test_search_report_and_cohort_in_the_browser(browser: webdriver.Chrome, server: Server,
                                                 downloads: Path, tmp_path: Path) -> None:
    browser.get(server.base + "/")
    token = wait(browser, ec.visibility_of_element_located((By.ID, "token")))
    token.send_keys(server.tokens["researcher"])
    browser.find_element(By.ID, "purpose").send_keys(PURPOSE + Keys.ENTER)
    search_box = wait(browser, ec.visibility_of_element_located((By.ID, "q")))
    assert browser.switch_to.active_element == search_box  # keyboard-ready after login

    search_box.send_keys("no pneumothorax" + Keys.ENTER)
    wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "#results .hit")))
    hits = browser.find_elements(By.CSS_SELECTOR, "#results .hit")
    assert len(hits) == 20
    for hit in hits:
        negated = [s.text.lower() for s in hit.find_elements(By.CSS_SELECTOR, ".f-absent")]
        present = [s.text.lower() for s in hit.find_elements(By.CSS_SELECTOR, ".f-present")]
        assert "pneumothorax" in negated and "pneumothorax" not in present
    style = browser.execute_script(
        "const a = document.querySelector('#results .f-absent'),"
        " p = document.querySelector('.legend .f-present');"
        "return [getComputedStyle(a).textDecorationLine, getComputedStyle(a).color,"
        " getComputedStyle(p).color];")
    assert "line-through" in style[0] and style[1] != style[2]  # struck and coloured apart
    assert "of" in browser.find_element(By.ID, "search-status").text
    last = json.loads(server.audit.read_text().splitlines()[-1])
    assert (last["endpoint"], last["purpose"], last["params"]["q"]) == (
        "search", PURPOSE, "no pneumothorax")
    shoot(browser, "screenshot-search.png", tmp_path)

    first = hits[0].get_attribute("data-report")
    hits[0].find_element(By.TAG_NAME, "button").click()
    wait(browser, ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#report-view h2"), first))
    view = browser.find_element(By.ID, "report-view")
    assert view.find_elements(By.CSS_SELECTOR, ".text .f-absent")
    assert view.find_elements(By.CSS_SELECTOR, ".text .cue")  # the negation's own words
    assert "NEGATED_EXISTENCE".lower() in " ".join(
        td.text for td in view.find_elements(By.CSS_SELECTOR, "td.trigger"))
    assert browser.find_element(By.CSS_SELECTOR, "#panel-report .legend").is_displayed()
    shoot(browser, "screenshot-report.png", tmp_path)

    tab = browser.find_element(By.ID, "tab-report")
    tab.send_keys(Keys.ARROW_RIGHT)  # tabs follow the arrow keys
    assert browser.find_element(By.ID, "tab-patient").get_attribute("aria-selected") == "true"
    browser.find_element(By.ID, "tab-cohort").click()
    browser.find_element(By.ID, "cohort-query").send_keys(COHORT_QUERY)
    level = browser.find_element(By.ID, "cohort-level")
    level.send_keys("report")
    browser.find_element(By.CSS_SELECTOR, "#cohort-form button[type=submit]").click()
    wait(browser, ec.visibility_of_element_located((By.ID, "cohort-counts")))
    counts = Cohort(server.index).counts(COHORT_QUERY)
    assert counts["report"] > counts["patient"] > 0
    for unit in ("patient", "visit", "report"):
        shown = browser.find_element(By.ID, f"count-{unit}").text.replace(",", "")
        assert int(shown) == counts[unit]
    shoot(browser, "screenshot-cohort.png", tmp_path)

    browser.find_element(By.ID, "cohort-csv").click()
    pattern = "cohort-pneumonia-and-not-pleural-effusion-reports-2*.csv"  # named by the API
    deadline = time.monotonic() + 30
    while not list(downloads.glob(pattern)) and time.monotonic() < deadline:
        time.sleep(0.2)
    (target,) = downloads.glob(pattern)
    expected = tmp_path / "cli.csv"
    clinsearch("cohort", str(server.index), COHORT_QUERY, "--level", "report", "--export",
               str(expected))
    assert target.read_bytes() == expected.read_bytes()
    assert target.read_text().count("\n") == 2 + counts["report"] + 1  # '#' lines, header


def log_in(browser: webdriver.Chrome, server: Server) -> None:
    """Open the page as the researcher: log in unless this tab's session already holds a
    token (the login form shows until the page has read the session, so it is not the test)."""
    browser.get(server.base + "/")
    if browser.execute_script("return sessionStorage.getItem('clinsearch.token')"):
        wait(browser, ec.visibility_of_element_located((By.ID, "q")))
        return
    wait(browser, ec.visibility_of_element_located((By.ID, "token"))).send_keys(
        server.tokens["researcher"])
    browser.find_element(By.ID, "purpose").send_keys(PURPOSE + Keys.ENTER)


def test_search_shows_tier_headers_and_badges(browser: webdriver.Chrome, server: Server,
                                              tmp_path: Path) -> None:
    from selenium.webdriver.support.ui import Select

    log_in(browser, server)
    search_box = wait(browser, ec.visibility_of_element_located((By.ID, "q")))
    browser.find_element(By.ID, "filters").click()
    Select(browser.find_element(By.ID, "per-page")).select_by_visible_text("50")
    search_box.clear()
    search_box.send_keys("pneumonia" + Keys.ENTER)
    head = wait(browser, ec.presence_of_element_located(
        (By.CSS_SELECTOR, '#results .tier-head[data-tier="indication"]')))
    assert head.text == "stated only as the reason for the exam: 4 reports"
    heads = [h.get_attribute("data-tier")
             for h in browser.find_elements(By.CSS_SELECTOR, "#results .tier-head")]
    assert heads == ["stated", "partial", "indication"]  # in the tier order, each once
    badges = browser.find_elements(By.CSS_SELECTOR, '#results .tier-badge[data-tier="indication"]')
    assert len(badges) == 4
    assert all(b.text == "stated only as the reason for the exam · “indication”" for b in badges)
    status = browser.find_element(By.ID, "search-status").text
    assert "by tier: stated now with every asked modifier: 24" in status
    shoot(browser, "screenshot-tiers.png", tmp_path)


def test_cohort_counts_a_wider_tier_with_one_click(browser: webdriver.Chrome, server: Server,
                                                   downloads: Path, tmp_path: Path) -> None:
    log_in(browser, server)
    wait(browser, ec.visibility_of_element_located((By.ID, "q")))
    browser.find_element(By.ID, "tab-cohort").click()
    query = browser.find_element(By.ID, "cohort-query")
    query.clear()
    query.send_keys("pneumonia")
    browser.find_element(By.ID, "cohort-level").send_keys("report")
    browser.find_element(By.CSS_SELECTOR, "#cohort-form button[type=submit]").click()
    wait(browser, ec.text_to_be_present_in_element((By.ID, "cohort-counted"), "Tiers counted"))
    assert browser.find_element(By.ID, "count-report").text == "24"  # strict: asserted now
    assert "Tiers counted: stated, partial" in browser.find_element(By.ID, "cohort-counted").text
    wider = browser.find_element(By.ID, "cohort-wider").text
    assert "+4 reports if stated only as the reason for the exam counts" in wider
    shoot(browser, "screenshot-cohort-tiers.png", tmp_path)

    browser.find_element(By.CSS_SELECTOR, "#cohort-wider input[data-tier=indication]").click()
    wait(browser, ec.text_to_be_present_in_element((By.ID, "count-report"), "28"))
    assert "indication" in browser.find_element(By.ID, "cohort-counted").text
    assert browser.find_element(
        By.CSS_SELECTOR, "#cohort-wider input[data-tier=indication]").is_selected()
    assert "context=indication" in browser.current_url  # the page's state keeps the tier

    browser.find_element(By.ID, "cohort-csv").click()
    pattern = "cohort-pneumonia-reports-2*.csv"
    deadline = time.monotonic() + 30
    while not list(downloads.glob(pattern)) and time.monotonic() < deadline:
        time.sleep(0.2)
    (target,) = downloads.glob(pattern)
    assert target.read_text().splitlines()[:2] == [
        "# cohort definition: pneumonia; level report",
        "# tiers counted: stated, partial, indication"]

    browser.find_element(By.CSS_SELECTOR, "#cohort-wider input[data-tier=indication]").click()
    wait(browser, ec.text_to_be_present_in_element((By.ID, "count-report"), "24"))
    assert "indication" not in browser.find_element(By.ID, "cohort-counted").text
