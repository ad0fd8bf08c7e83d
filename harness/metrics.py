"""Aggregating per-step metrics into FINAL_RESULT and step-time statistics."""

from __future__ import annotations

import math
import statistics
from typing import Sequence

from harness.models import StepRecord
from harness.models.result import StepTimeStats


def percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolated percentile (same as numpy's default), ``pct`` in [0, 100]."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def measured_steps(steps: Sequence[StepRecord], skip_steps: int) -> list[StepRecord]:
    """Steps after the first ``skip_steps`` logged steps (the unstable warm-up).

    When a run logged no more steps than it should skip, the last step is kept so a short
    run still yields a number rather than nothing.
    """
    if len(steps) > skip_steps:
        return list(steps[skip_steps:])
    return list(steps[-1:])


def step_time_stats(steps: Sequence[StepRecord]) -> StepTimeStats | None:
    times = [s.step_time_s for s in steps if s.step_time_s is not None]
    if not times:
        return None
    mean = statistics.fmean(times)
    stdev = statistics.stdev(times) if len(times) > 1 else 0.0
    return StepTimeStats(
        n=len(times),
        mean=mean,
        median=statistics.median(times),
        p5=percentile(times, 5),
        p95=percentile(times, 95),
        cv=stdev / mean if mean > 0 else 0.0,
    )


def mean_throughput(steps: Sequence[StepRecord]) -> float | None:
    values = [s.throughput for s in steps if s.throughput is not None]
    return statistics.fmean(values) if values else None


def median_throughput(steps: Sequence[StepRecord]) -> float | None:
    values = [s.throughput for s in steps if s.throughput is not None]
    return statistics.median(values) if values else None


def coefficient_of_variation(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean else 0.0
