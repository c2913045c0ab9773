"""The cohort workbench in a real headless Chromium, as a researcher works: build a term bundle,
upload a patient list, run a negation-aware cohort restricted to it, save it, reload its URL,
read its counts by year, open a patient timeline, export the list; then rerun the saved cohort,
compare two lists, and (as an admin) filter the audit trail and verify its chain.

Every number the page shows is checked against the Python API on the same index.
Set ``CLINSEARCH_SCREENSHOTS=docs/images`` to refresh the screenshots in the docs.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from clinsearch.search.cohort import Cohort, members_csv_rows
from clinsearch.server.download_names import cohort_export_name

from .conftest import Server, downloaded, shoot, wait

webdriver = pytest.importorskip("selenium.webdriver")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.common.keys import Keys  # noqa: E402
from selenium.webdriver.support import expected_conditions as ec  # noqa: E402
from selenium.webdriver.support.select import Select  # noqa: E402

PURPOSE = "workbench checks"
BUNDLE = "Lung infection"
TERMS = ["pneumonia", "consolidation", "bronchograms"]  # the last is not in the lexicon
QUERY = f'bundle:"{BUNDLE}" AND NOT "pleural effusion"'
PATIENTS = ["P001", "P002", "P029", "P030", "P031", "P035", "P040", "NOT-A-PATIENT"]


MIXED_PATIENT, MIXED_QUERY = "P043", "pleural effusion"  # 1 of the patient's 3 reports


def timeline(browser: webdriver.Chrome) -> list[tuple[str, bool]]:
    """The timeline shown: (report id, matched) in the page's order."""
    return [(v.get_attribute("data-report"), "matched" in v.get_attribute("class").split())
            for v in browser.find_elements(By.CSS_SELECTOR, "#patient-view .visit")]


def expected_timeline(cohort: Cohort, patient: str, query: str, scope: object = None
                      ) -> list[tuple[str, bool]]:
    """A patient's reports as the timeline should list them: matched ones first, each group
    by date (the Python API's report mask and dates)."""
    own = cohort.id_mask("patient", [patient])[0]
    matched = cohort.engine.report_mask(query, scope or cohort.scope())  # type: ignore[arg-type]
    rows = own.nonzero()[0]
    arrays = cohort.engine.arrays
    ids, dates = arrays.values.reports("id", rows), arrays.report_labels(rows)["date"]
    order = sorted(zip(rows.tolist(), ids, dates, strict=True),
                   key=lambda r: (not matched[r[0]], r[2], r[1]))
    return [(report_id, bool(matched[row])) for row, report_id, _ in order]


def sign_in(browser: webdriver.Chrome, server: Server, role: str) -> None:
    """Open the page afresh and start a session as ``role``."""
    browser.get(server.base + "/")
    browser.execute_script("sessionStorage.clear()")
    browser.get(server.base + "/")
    wait(browser, ec.visibility_of_element_located((By.ID, "token"))).send_keys(
        server.tokens[role])
    browser.find_element(By.ID, "purpose").send_keys(PURPOSE + Keys.ENTER)
    wait(browser, ec.visibility_of_element_located((By.ID, "q")))


def expected_scope(server: Server) -> tuple[Cohort, object]:
    """The Python API's cohort and the scope the page's bundle and list stand for."""
    cohort = Cohort(server.index)
    mask, missing = cohort.id_mask("patient", PATIENTS)
    assert missing == ["NOT-A-PATIENT"]
    return cohort, cohort.scope({BUNDLE: TERMS}, mask)


def test_researcher_builds_a_restricted_cohort_and_follows_it_in_the_browser(
        browser: webdriver.Chrome, server: Server, downloads: Path, tmp_path: Path) -> None:
    sign_in(browser, server, "researcher")

    # a term bundle, built on the page: each term shown with how cohorts read it
    browser.find_element(By.ID, "tab-bundles").click()
    browser.find_element(By.ID, "bundle-name").send_keys(BUNDLE)
    browser.find_element(By.ID, "bundle-terms").send_keys("\n".join(TERMS))
    browser.find_element(By.CSS_SELECTOR, "#bundle-form button[type=submit]").click()
    row = wait(browser, ec.presence_of_element_located(
        (By.CSS_SELECTOR, f'#bundle-list tr[data-bundle="{BUNDLE}"]')))
    assert [c.text for c in row.find_elements(By.CSS_SELECTOR, ".read-finding")] == TERMS[:2]
    assert [c.text for c in row.find_elements(By.CSS_SELECTOR, ".read-text")] == TERMS[2:]
    shoot(browser, "screenshot-bundles.png", tmp_path)

    # a patient list uploaded as CSV (one id unknown to the index)
    upload = tmp_path / "my-patients.csv"
    upload.write_text("patient_id\n" + "\n".join(PATIENTS) + "\n")
    browser.find_element(By.ID, "tab-lists").click()
    browser.find_element(By.ID, "list-name").send_keys("EHR export")
    browser.find_element(By.ID, "list-file").send_keys(str(upload))
    browser.find_element(By.CSS_SELECTOR, "#list-form button[type=submit]").click()
    wait(browser, ec.text_to_be_present_in_element((By.ID, "list-status"), "not found"))
    assert "8 ids, 7 in the index, 1 not found (NOT-A-PATIENT)" in browser.find_element(
        By.ID, "list-status").text

    # the negation-aware cohort, restricted to the list
    browser.find_element(By.ID, "tab-cohort").click()
    Select(browser.find_element(By.ID, "cohort-bundle")).select_by_value(BUNDLE)
    browser.find_element(By.ID, "cohort-query").send_keys(' AND NOT "pleural effusion"')
    assert browser.find_element(By.ID, "cohort-query").get_attribute("value") == QUERY
    Select(browser.find_element(By.ID, "cohort-list")).select_by_visible_text(
        "EHR export (8 patients)")
    browser.find_element(By.CSS_SELECTOR, "#cohort-form button[type=submit]").click()
    wait(browser, ec.visibility_of_element_located((By.ID, "cohort-charts")))
    cohort, scope = expected_scope(server)
    counts = cohort.counts(QUERY, scope)  # type: ignore[arg-type]
    assert 0 < counts["patient"] < len(PATIENTS) - 1  # the list and the negation both bite
    assert counts != cohort.counts(QUERY, cohort.scope({BUNDLE: TERMS}))

    def shown_counts() -> dict[str, int]:
        return {u: int(browser.find_element(By.ID, f"count-{u}").text.replace(",", ""))
                for u in ("patient", "visit", "report")}

    assert shown_counts() == counts

    # counts by year, drawn on the page, are the cohort's
    years = cohort.breakdown(QUERY, scope).year  # type: ignore[arg-type]
    bars = wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#chart-date g.bar"))
    assert {b.get_attribute("data-label"): int(b.get_attribute("data-value"))
            for b in bars} == years
    assert sum(years.values()) == counts["report"]

    # the polarity mix of a finding, within the list
    browser.find_element(By.ID, "mix-term").send_keys("pneumothorax" + Keys.ENTER)
    bars = wait(browser, lambda b: b.find_elements(By.CSS_SELECTOR, "#chart-mix g.bar"))
    mask = cohort.id_mask("patient", PATIENTS)[0]
    assert {b.get_attribute("data-label"): int(b.get_attribute("data-value"))
            for b in bars} == cohort.polarity_mix("pneumothorax", cohort.scope(within=mask))

    # saved under a name; the URL reloads to the same cohort
    browser.find_element(By.ID, "save-name").send_keys("lung infection in my list")
    browser.find_element(By.CSS_SELECTOR, "#save-form button[type=submit]").click()
    wait(browser, ec.text_to_be_present_in_element((By.ID, "save-status"), "saved"))
    url = browser.current_url
    assert "view=cohort" in url and "list=" in url
    browser.refresh()
    wait(browser, ec.visibility_of_element_located((By.ID, "cohort-charts")))
    assert browser.find_element(By.ID, "cohort-query").get_attribute("value") == QUERY
    assert shown_counts() == counts
    assert Select(browser.find_element(By.ID, "cohort-list")).first_selected_option.text == (
        "EHR export (8 patients)")
    shoot(browser, "screenshot-workbench-cohort.png", tmp_path)

    # the list exported as CSV: the Python API's members, with the same restriction
    browser.find_element(By.ID, "cohort-csv").click()
    got = downloaded(downloads, cohort_export_name(QUERY, "patient")).read_bytes()
    members = cohort.members(QUERY, "patient", scope)  # type: ignore[arg-type]
    buffer = io.StringIO()
    csv.writer(buffer).writerows(members_csv_rows(members, "patient"))
    head, tiers, rest = got.split(b"\r\n", 2)
    assert head.startswith(b"# cohort definition: ") and b"; level patient; id list " in head
    assert tiers == b"# tiers counted: stated, partial"
    assert rest == buffer.getvalue().encode()

    # a patient's timeline, opened from the members table: reports by date, matched first
    first = members[0].ids[0]
    browser.find_element(By.CSS_SELECTOR, "#cohort-members button.link").click()
    wait(browser, ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#patient-view h2"), first))
    assert timeline(browser) == expected_timeline(cohort, first, QUERY, scope)
    assert browser.find_elements(By.CSS_SELECTOR, "#patient-view .chip.f-present")
    # another patient, another query: one of three reports matches and comes first
    browser.find_element(By.ID, "patient-id").clear()
    browser.find_element(By.ID, "patient-id").send_keys(MIXED_PATIENT)
    browser.find_element(By.ID, "patient-query").clear()
    browser.find_element(By.ID, "patient-query").send_keys(MIXED_QUERY + Keys.ENTER)
    wait(browser, ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#patient-view h2"),
                                                   MIXED_PATIENT))
    shown = timeline(browser)
    assert shown == expected_timeline(cohort, MIXED_PATIENT, MIXED_QUERY)
    assert [m for _, m in shown] == [True, False, False]
    assert "view=patient" in browser.current_url
    shoot(browser, "screenshot-timeline.png", tmp_path)
    browser.refresh()  # the timeline's URL reloads too
    wait(browser, ec.text_to_be_present_in_element((By.CSS_SELECTOR, "#patient-view h2"),
                                                   MIXED_PATIENT))
    assert timeline(browser) == shown

    # the saved cohort, rerun: nothing changed since
    browser.find_element(By.ID, "tab-saved").click()
    saved_row = '#saved-view tr[data-saved="lung infection in my list"]'
    rerun = wait(browser, ec.element_to_be_clickable(
        (By.CSS_SELECTOR, f"{saved_row} button:nth-of-type(2)")))
    rerun.click()
    wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "#rerun-view table")))
    cells = browser.find_elements(By.CSS_SELECTOR, "#rerun-view tbody tr:first-child td")
    assert [c.text for c in cells] == [str(counts["patient"])] * 2 + ["+0"]
    assert "cohort" in browser.find_element(By.ID, "history-view").text

    audit = [json.loads(line) for line in server.audit.read_text().splitlines()]
    endpoints = {r.get("endpoint") for r in audit if r.get("purpose") == PURPOSE}
    assert {"cohort", "charts/cohort", "cohort/export", "patients/timeline", "saved/save",
            "saved/rerun", "lists/upload"} <= endpoints


def test_two_lists_compared_and_the_audit_viewer(browser: webdriver.Chrome, server: Server,
                                                  tmp_path: Path) -> None:
    sign_in(browser, server, "admin")
    browser.find_element(By.ID, "tab-lists").click()
    for name, ids in (("A", ["P001", "P002", "P003"]), ("B", ["P002", "P003", "P004", "P005"])):
        path = tmp_path / f"{name}.csv"
        path.write_text("\n".join(ids) + "\n")
        browser.find_element(By.ID, "list-name").send_keys(name)
        browser.find_element(By.ID, "list-file").send_keys(str(path))
        browser.find_element(By.CSS_SELECTOR, "#list-form button[type=submit]").click()
        wait(browser, ec.text_to_be_present_in_element((By.ID, "list-status"), f"{name}: "))
    Select(browser.find_element(By.ID, "compare-a")).select_by_visible_text("A (3 patients)")
    Select(browser.find_element(By.ID, "compare-b")).select_by_visible_text("B (4 patients)")
    browser.find_element(By.CSS_SELECTOR, "#compare-form button[type=submit]").click()
    wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "#compare-view td")))
    parts = {td.get_attribute("data-part"): td.find_element(By.TAG_NAME, "strong").text
             for td in browser.find_elements(By.CSS_SELECTOR, "#compare-view td")}
    assert parts == {"both": "2", "only_a": "1", "only_b": "2"}

    browser.find_element(By.ID, "tab-audit").click()
    uploads = [json.loads(line) for line in server.audit.read_text().splitlines()]
    expected = sum(r.get("endpoint") == "lists/upload" for r in uploads)
    assert expected >= 2
    browser.find_element(By.ID, "audit-endpoint").send_keys("lists/upload" + Keys.ENTER)
    wait(browser, ec.text_to_be_present_in_element((By.ID, "audit-status"),
                                                   f"{expected} records match"))
    rows = browser.find_elements(By.CSS_SELECTOR, "#audit-view tbody tr")
    assert len(rows) == expected
    assert "endpoint=lists%2Fupload" in browser.current_url
    browser.find_element(By.ID, "audit-verify").click()
    wait(browser, ec.text_to_be_present_in_element((By.ID, "audit-status"), "chain intact"))
    shoot(browser, "screenshot-audit.png", tmp_path)


def test_search_counts_explains_and_reloads_from_its_url(browser: webdriver.Chrome,
                                                        server: Server, tmp_path: Path) -> None:
    sign_in(browser, server, "researcher")
    browser.set_window_size(1366, 768)  # a laptop screen
    try:
        box = browser.find_element(By.ID, "q")
        Select(browser.find_element(By.ID, "method")).select_by_value("hybrid")
        box.send_keys("pneumothorax" + Keys.ENTER)
        wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "#results .hit")))
        cohort = Cohort(server.index)
        exact = cohort.counts('"pneumothorax"')["report"]
        status = browser.find_element(By.ID, "search-status").text
        assert f"{exact} reports assert the query (exact, as the cohort counts)" in status
        visible = browser.execute_script(  # scrolled to the first card, as one reads them
            "const hits = [...document.querySelectorAll('#results .hit')];"
            "hits[0].scrollIntoView(); const top = hits[0].getBoundingClientRect().top;"
            "return hits.filter((h) => h.getBoundingClientRect().bottom - top"
            " <= window.innerHeight).length")
        assert visible >= 10  # compact cards
        # hybrid hits say which methods found them and why
        why = browser.find_element(By.CSS_SELECTOR, "#results .hit .why").text
        assert "concept #" in why and "bm25 #" in why
        # "No pneumothorax." never sits among the present ones: ranked apart, and said so
        cards = browser.find_elements(By.CSS_SELECTOR, "#results > *")
        kinds = ["head" if c.tag_name == "h3" else
                 "against" if "against" in c.get_attribute("class").split() else "agrees"
                 for c in cards]
        assert "against" in kinds and kinds == sorted(kinds, key=["agrees", "head",
                                                                  "against"].index)
        for card in browser.find_elements(By.CSS_SELECTOR, "#results .hit.against"):
            assert "states it as absent" in card.text
            assert card.find_elements(By.CSS_SELECTOR, ".f-absent")
        url = browser.current_url
        assert "view=search" in url and "method=hybrid" in url
        shoot(browser, "screenshot-hybrid-search.png", tmp_path)
        browser.get(url)  # the URL, opened afresh, shows the same search
        wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR, "#results .hit")))
        assert browser.find_element(By.ID, "search-status").text == status
        assert browser.find_element(By.ID, "method").get_attribute("value") == "hybrid"

        # the search saved under a name, listed with its exact counts
        browser.find_element(By.ID, "save-search-name").send_keys("pneumothorax" + Keys.ENTER)
        wait(browser, ec.text_to_be_present_in_element((By.ID, "save-search-status"),
                                                       "saved"))
        browser.find_element(By.ID, "tab-saved").click()
        row = wait(browser, ec.presence_of_element_located(
            (By.CSS_SELECTOR, '#saved-view tr[data-saved="pneumothorax"]')))
        assert "search" in row.text and f"{exact} reports" in row.text
        browser.find_element(By.ID, "tab-search").click()

        # a report opened from a hit: its hits marked, and the stepper moves between them
        browser.find_element(By.CSS_SELECTOR, "#results .hit:not(.against) button").click()
        wait(browser, ec.visibility_of_element_located((By.ID, "hit-next")))
        marks = browser.find_elements(By.CSS_SELECTOR, "#report-view .text .hl")
        assert marks and all(m.get_attribute("title").startswith("pneumothorax:")
                             for m in marks)  # parts of the report's pneumothorax findings
        browser.find_element(By.ID, "hit-next").click()
        current = browser.find_element(By.CSS_SELECTOR, "#report-view .current-hit")
        assert current.get_attribute("title").startswith("pneumothorax:")
        assert browser.find_element(By.CSS_SELECTOR, ".hit-status").text.startswith("hit 1 of")
        # plain anatomy ("heart", "lungs") is not marked as a finding
        anatomy = {"heart", "lungs", "lung", "chest"}
        assert not [s.text for s in browser.find_elements(
            By.CSS_SELECTOR, "#report-view .text .f-present") if s.text.lower() in anatomy]
        assert "hits=pneumothorax" in browser.current_url
    finally:
        browser.set_window_size(1280, 1000)


def test_viewer_sees_counts_without_members_and_bad_tokens_say_why(
        browser: webdriver.Chrome, server: Server) -> None:
    sign_in(browser, server, "viewer")
    browser.find_element(By.ID, "tab-cohort").click()
    browser.find_element(By.ID, "cohort-query").send_keys("pneumonia")
    browser.find_element(By.CSS_SELECTOR, "#cohort-form button[type=submit]").click()
    wait(browser, ec.text_to_be_present_in_element((By.ID, "cohort-members"), "counts only"))
    assert browser.find_element(By.ID, "cohort-counts").is_displayed()
    assert "counts only" in browser.find_element(By.ID, "cohort-members").text
    assert not browser.find_elements(By.CSS_SELECTOR, "#cohort-members table")
    assert not browser.find_element(By.ID, "cohort-next").is_displayed()
    assert not browser.find_element(By.ID, "cohort-prev").is_displayed()

    browser.find_element(By.ID, "sign-out").click()
    wait(browser, ec.visibility_of_element_located((By.ID, "token"))).send_keys(
        "not-a-token")
    browser.find_element(By.ID, "purpose").send_keys(PURPOSE + Keys.ENTER)
    wait(browser, ec.text_to_be_present_in_element((By.ID, "login-error"), "not known"))
    message = browser.find_element(By.ID, "login-error").text
    assert message.startswith("Your token was not accepted: this token is not known")


def test_explain_shows_the_context_a_query_states(browser: webdriver.Chrome,
                                                  server: Server) -> None:
    sign_in(browser, server, "researcher")
    browser.find_element(By.ID, "tab-explain").click()
    box = browser.find_element(By.ID, "explain-q")
    box.clear()
    box.send_keys("history of pneumonia" + Keys.ENTER)
    row = wait(browser, ec.presence_of_element_located((By.CSS_SELECTOR,
                                                        "#explain-view tbody tr")))
    cells = [c.text for c in row.find_elements(By.CSS_SELECTOR, "td")]
    assert cells[2] == "present, historical"  # searched as context:historical pneumonia
