"""The statistics module against hand-computed values."""

from __future__ import annotations

import statistics
from array import array

import pytest

from harness.stats import (
    after_warmup, coefficient_of_variation, mean, mean_after_warmup, percentile, spread, stdev,
    step_time_stats,
)


def test_mean_and_sample_standard_deviation():
    values = [2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]
    assert mean(values) == 5.0 and mean(array("d", [1.0, 2.0])) == 1.5 and mean([]) is None
    assert stdev(values) == pytest.approx(statistics.stdev(values))
    assert stdev([3.0]) == 0.0
    assert coefficient_of_variation(values) == pytest.approx(statistics.stdev(values) / 5.0)


def test_warmup_values_are_skipped():
    throughputs = [20.0, 33.3, 100.0, 50.0, 25.0]
    assert list(after_warmup(throughputs, 2)) == [100.0, 50.0, 25.0]
    assert mean_after_warmup(throughputs, 2) == pytest.approx((100 + 50 + 25) / 3)


def test_short_run_keeps_its_last_value():
    assert list(after_warmup([1.0, 2.0], 5)) == [2.0]
    assert mean_after_warmup([1.0, 2.0], 5) == 2.0
    assert mean_after_warmup([], 5) is None


def test_step_time_stats_after_warmup():
    stats = step_time_stats(array("d", [9.0, 1.0, 2.0, 3.0, 4.0, 5.0]), skip=1)
    assert (stats.n, stats.mean, stats.median) == (5, 3.0, 3.0)
    assert stats.p5 == pytest.approx(1.2) and stats.p95 == pytest.approx(4.8)
    assert stats.cv == pytest.approx(1.5811388 / 3.0)
    assert step_time_stats([], skip=1) is None


def test_percentile_matches_linear_interpolation():
    assert percentile([10, 20, 30, 40], 50) == 25
    assert percentile([7], 95) == 7
    with pytest.raises(ValueError):
        percentile([], 50)


def test_cv_of_repeats():
    assert coefficient_of_variation([100.0, 100.0]) == 0.0
    assert coefficient_of_variation([90.0, 110.0]) == pytest.approx(14.142135 / 100)
    assert coefficient_of_variation([5.0]) == 0.0


def test_cv_agrees_with_exact_statistics():
    values = [101.5, 99.25, 100.125, 98.0, 102.75]
    exact = statistics.stdev(values) / statistics.fmean(values)
    assert coefficient_of_variation(values) == pytest.approx(exact, rel=1e-12)


def test_spread():
    measured = spread([4.0, 1.0, 3.0, 2.0])
    assert (measured.n, measured.mean, measured.median) == (4, 2.5, 2.5)
    assert spread([]) is None


def test_total_work_rate_weighs_steps_by_their_time():
    from harness.stats import total_work_rate

    # after 1 warm-up step: 100 units/s for 1 s and 50 units/s for 2 s = 200 units in 3 s
    assert total_work_rate([10.0, 100.0, 50.0], [9.0, 1.0, 2.0], skip=1) == pytest.approx(200 / 3)
    # FINAL_RESULT (mean of rates) would say 75: the total-work figure is lower
    assert total_work_rate([1.0, 2.0], [1.0], skip=0) is None  # unpaired series
    assert total_work_rate([], [], skip=0) is None


def test_geometric_mean():
    from harness.stats import geometric_mean

    assert geometric_mean([2.0, 0.5]) == pytest.approx(1.0)
    assert geometric_mean([0.9, 1.1, 1.03]) == pytest.approx((0.9 * 1.1 * 1.03) ** (1 / 3))
    assert geometric_mean([]) is None and geometric_mean([1.0, 0.0]) is None
