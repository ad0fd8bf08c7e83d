"""FINAL_RESULT and step-time statistics against hand-computed values."""

from __future__ import annotations

import pytest

from harness.metrics import (
    coefficient_of_variation, mean_throughput, measured_steps, percentile, step_time_stats,
)
from harness.models import StepRecord


def steps(times):
    return [StepRecord(step=i + 1, step_time_s=t, throughput=100.0 / t) for i, t in enumerate(times)]


def test_warmup_steps_are_skipped():
    records = steps([5.0, 3.0, 1.0, 2.0, 4.0])
    kept = measured_steps(records, skip_steps=2)
    assert [r.step for r in kept] == [3, 4, 5]
    assert mean_throughput(kept) == pytest.approx((100 + 50 + 25) / 3)


def test_short_run_keeps_its_last_step():
    assert [r.step for r in measured_steps(steps([1.0, 2.0]), skip_steps=5)] == [2]


def test_step_time_stats():
    stats = step_time_stats(steps([1.0, 2.0, 3.0, 4.0, 5.0]))
    assert (stats.n, stats.mean, stats.median) == (5, 3.0, 3.0)
    assert stats.p5 == pytest.approx(1.2) and stats.p95 == pytest.approx(4.8)
    assert stats.cv == pytest.approx(1.5811388 / 3.0)


def test_percentile_matches_linear_interpolation():
    assert percentile([10, 20, 30, 40], 50) == 25
    assert percentile([7], 95) == 7


def test_cv_of_repeats():
    assert coefficient_of_variation([100.0, 100.0]) == 0.0
    assert coefficient_of_variation([90.0, 110.0]) == pytest.approx(14.142135 / 100)
