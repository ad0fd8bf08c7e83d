"""Olympic scoring, the repeats rule and the noise bound."""

from __future__ import annotations

import pytest

from harness.certify.scoring import check_noise, check_repeats, olympic_score


def test_olympic_drops_best_and_worst():
    assert olympic_score([10, 100, 11, 12, 1]) == pytest.approx(11)
    assert olympic_score([3, 1, 2]) == 2
    assert olympic_score([4, 6]) == 5 and olympic_score([]) is None


def test_one_failed_repeat_is_tolerated_two_are_not():
    ok = ("success", None)
    assert check_repeats([ok, ok, ok, ("failed", "x")], 4, 1, "p").passed
    verdict = check_repeats([ok, ok, ok, ("failed", "oom"), ("hang", None)], 5, 1, "p")
    assert not verdict.passed and "2 of 5 repeats failed" in verdict.reason and "oom" in verdict.reason


def test_repeats_that_did_not_run_count_as_failed():
    ok = ("success", None)
    assert not check_repeats([ok, ok, ok], 5, 1, "p").passed
    assert not check_repeats([ok, ok, ("failed", None)], 3, 1, "p").passed  # olympic needs 3


def test_noise_bound():
    assert check_noise([100, 101, 99], 0.03, "p").passed
    verdict = check_noise([100, 130, 80], 0.03, "p")
    assert not verdict.passed and "exceeds the suite's bound 3%" in verdict.reason
    assert not check_noise([100], 0.03, "p").passed


def test_the_smoke_suites_median_based_spread_shrugs_off_one_slowed_repeat():
    from harness.certify.scoring import robust_spread

    busy = [1000.0, 980.0, 450.0]  # a neighbour's burst slowed one repeat
    assert not check_noise(busy, 0.35, "p").passed  # CV 38%
    verdict = check_noise(busy, 0.35, "p", robust=True)
    assert verdict.passed and "median-based spread" in verdict.reason
    assert robust_spread(busy) == pytest.approx(1.4826 * 20 / 980)
    # Two of three repeats disagreeing is still noise, median-based or not.
    assert not check_noise([1000.0, 600.0, 300.0], 0.30, "p", robust=True).passed
    assert robust_spread([5.0]) is None
