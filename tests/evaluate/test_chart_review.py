"""Chart review's figures against values published elsewhere, and its seeded draw."""

from __future__ import annotations

import hashlib

import pytest

from clinsearch.evaluate.chart_review import (
    Item,
    Judgment,
    cohen_kappa,
    disagreements,
    draw_sample,
    final_verdicts,
    review_figures,
    wilson,
)


def test_wilson_interval_matches_published_values() -> None:
    # Newcombe (1998), Statistics in Medicine 17:857, table I: 81/263 -> 0.2553-0.3662;
    # 15/148 -> 0.0624-0.1605; 0/20 -> 0-0.1611
    for (k, n), (low, high) in {(81, 263): (0.2553, 0.3662), (15, 148): (0.0624, 0.1605),
                                (0, 20): (0.0, 0.1611)}.items():
        got = wilson(k, n)
        assert got == pytest.approx((low, high), abs=5e-5)
    assert wilson(0, 0) == (0.0, 1.0)


def test_cohen_kappa_matches_the_textbook_example() -> None:
    # 50 items: both yes 20, A yes B no 5, A no B yes 10, both no 15 -> kappa 0.4
    pairs = [("y", "y")] * 20 + [("y", "n")] * 5 + [("n", "y")] * 10 + [("n", "n")] * 15
    assert cohen_kappa(pairs) == pytest.approx(0.4)
    assert cohen_kappa([("y", "y")] * 3) is None  # chance agreement certain: undefined
    assert cohen_kappa([]) is None
    assert cohen_kappa([("y", "n"), ("n", "y")]) == pytest.approx(-1.0)


def test_a_seeded_draw_changes_only_where_members_come_or_go() -> None:
    ids = [f"R{n}" for n in range(100)]
    first = draw_sample(ids, 10, seed=7, key="q")
    assert first == draw_sample(list(reversed(ids)), 10, seed=7, key="q")
    assert first != draw_sample(ids, 10, seed=8, key="q")
    # the project's audit drew with the same rank (seed:cohort:uid) before this module existed
    assert first == sorted(sorted(ids, key=lambda u: hashlib.sha256(
        f"7:q:{u}".encode()).hexdigest())[:10])
    left = first[0]
    again = draw_sample([u for u in ids if u != left], 10, seed=7, key="q")
    assert len(set(first) & set(again)) == 9
    assert draw_sample(ids[:5], 10, seed=7) == ids[:5]  # all of a small cohort
    assert draw_sample(ids, None, seed=7) == sorted(ids)


def test_a_stratified_draw_gives_each_stratum_its_share() -> None:
    ids = [f"R{n:03d}" for n in range(100)]
    strata = {u: ("impression" if n < 70 else "findings") for n, u in enumerate(ids)}
    drawn = draw_sample(ids, 10, seed=1, strata=strata)
    assert len(drawn) == 10
    assert sum(strata[u] == "impression" for u in drawn) == 7
    odd = {u: ("a" if n < 50 else "b" if n < 75 else "c") for n, u in enumerate(ids)}
    assert sorted(odd[u] for u in draw_sample(ids, 5, seed=1, strata=odd)).count("a") in (2, 3)


def test_final_verdicts_wait_for_the_second_reviewer_and_list_disputes() -> None:
    items = [Item("R1"), Item("R2"), Item("R3"), Item("R4")]
    judged = [Judgment("R1", "ann", "meets"), Judgment("R1", "bob", "meets"),
              Judgment("R2", "ann", "meets"), Judgment("R2", "bob", "does_not_meet"),
              Judgment("R3", "ann", "cannot_tell"), Judgment("R4", "ann", "meets"),
              Judgment("R4", "bob", "does_not_meet")]
    final = final_verdicts(items, judged, {"R4": "does_not_meet"}, reviewers_required=2)
    assert final == {"R1": "meets", "R2": "disputed", "R3": "pending", "R4": "does_not_meet"}
    assert final_verdicts(items, judged, {}, 1)["R3"] == "cannot_tell"
    assert [(i.report_id, v) for i, v in disagreements(items, judged, {"R4": "meets"})] == [
        ("R2", {"ann": "meets", "bob": "does_not_meet"})]


def test_figures_precision_interval_kappa_and_recall() -> None:
    members = [Item(f"M{n}") for n in range(10)]
    others = [Item(f"N{n}", "nonmember") for n in range(4)]
    judged = [Judgment(f"M{n}", "ann", "meets" if n < 8 else "does_not_meet") for n in range(10)]
    judged += [Judgment(f"M{n}", "bob", "meets" if n < 7 else "does_not_meet")
               for n in range(10)]
    judged += [Judgment(f"N{n}", "ann", "meets" if n == 0 else "does_not_meet")
               for n in range(4)]
    figures = review_figures(members + others, judged, {"M7": "meets"}, members=40,
                             nonmember_pool=100)
    assert (figures.meets, figures.does_not_meet, figures.disputed) == (8, 2, 0)
    assert figures.precision == 0.8
    assert (figures.precision_low, figures.precision_high) == pytest.approx((0.4902, 0.9433),
                                                                           abs=5e-5)
    assert figures.kappa_items == 10  # ann and bob on the members (bob judged no others)
    assert figures.kappa == pytest.approx(cohen_kappa(
        [("meets", "meets")] * 7 + [("meets", "does_not_meet")]
        + [("does_not_meet", "does_not_meet")] * 2))
    # 0.8 * 40 = 32 true members found; 1/4 of 100 mentioning non-members missed: 25
    assert figures.recall == pytest.approx(32 / 57)
    assert figures.recall_low < figures.recall < figures.recall_high
    assert figures.lines()[0].startswith("precision: 0.800 (8 of 10 judged members meet;"
                                         " Wilson 95% 0.490-0.943)")
