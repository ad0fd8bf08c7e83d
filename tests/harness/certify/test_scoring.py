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
