"""The statistics of the harness, each rule implemented once.

- :func:`mean` and :func:`stdev`: the arithmetic mean and the sample standard deviation;
- :func:`after_warmup`: what is measured once the unstable warm-up is left out;
- :func:`mean_after_warmup`: FINAL_RESULT of ``harness run`` and of ``harness parse --method
  harness``;
- :func:`coefficient_of_variation`: the noise of repeats, of step times, of a method's values;
- :func:`percentile` and :func:`spread`: median, p5/p95 and CV reported next to a figure;
- :func:`step_time_stats`: the step-time statistics of a result;
- :func:`total_work_rate`: work done over the measured wall time (beside FINAL_RESULT);
- :func:`geometric_mean`: the summary of several ratios (a comparison of result sets);
- :func:`ratio_of_medians_interval`: whether two runs differ beyond their noise (a bootstrap
  confidence interval of the ratio of their per-step medians).

Every function takes plain sequences of floats (lists, or ``array('d')`` from a streamed log)
and computes in float arithmetic: ``statistics.stdev`` works in exact fractions, which takes
seconds for the millions of steps of a large log.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Sequence, TypeVar

from harness.models.result import StepTimeStats

T = TypeVar("T")


def mean(values: Sequence[float]) -> float | None:
    """Arithmetic mean (summed with :func:`math.fsum`); None for no values."""
    return statistics.fmean(values) if len(values) else None


def stdev(values: Sequence[float]) -> float:
    """Sample standard deviation (divided by n - 1); 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    centre = statistics.fmean(values)
    return math.sqrt(math.fsum((v - centre) ** 2 for v in values) / (len(values) - 1))


def after_warmup(values: Sequence[T], skip: int) -> Sequence[T]:
    """The values after the first ``skip`` (the unstable warm-up).

    A series no longer than ``skip`` keeps its last value, so a short run still yields a
    number rather than nothing.
    """
    return values[skip:] if len(values) > skip else values[-1:]


def covers_past_warmup(steps: Sequence[int], skip_iterations: int) -> bool:
    """Whether the records cover any iteration after the first ``skip_iterations`` (counted
    as :func:`first_record_after_warmup` counts them)."""
    if not steps or skip_iterations <= 0:
        return bool(steps)
    first_gap = steps[1] - steps[0] if len(steps) > 1 and steps[1] > steps[0] else 1
    return steps[-1] - (steps[0] - first_gap) > skip_iterations


def first_record_after_warmup(steps: Sequence[int], skip_iterations: int) -> int:
    """Index of the first record whose iterations all lie past the warm-up.

    ``steps[i]`` is the last training iteration record ``i`` covers; it covers the iterations
    after the previous record's (the first record: as many as the gap to the second). Warm-up
    is the first ``skip_iterations`` iterations the log covers (a resumed run warms up again),
    so with a record every 10 iterations a warm-up of 10 iterations skips one record, not ten.
    Returns ``len(steps) - 1`` when no record lies wholly past the warm-up (the last record
    is kept, so a short log still yields a figure), and 0 for no warm-up.
    """
    count = len(steps)
    if count == 0 or skip_iterations <= 0:
        return 0
    first_gap = steps[1] - steps[0] if count > 1 and steps[1] > steps[0] else 1
    base = steps[0] - first_gap  # the iteration before the first one the log covers
    threshold = base + skip_iterations
    if base >= threshold:
        return 0
    for index in range(1, count):
        if steps[index - 1] >= threshold:
            return index
    return count - 1


def mean_after_warmup(values: Sequence[float], skip: int) -> float | None:
    """Arithmetic mean of the values after the warm-up; None for no values."""
    return mean(after_warmup(values, skip))


def coefficient_of_variation(values: Sequence[float]) -> float:
    """Sample standard deviation / mean; 0 for fewer than two values or a zero mean."""
    centre = mean(values)
    if len(values) < 2 or not centre:
        return 0.0
    return stdev(values) / centre


def percentile(values: Sequence[float], pct: float) -> float:
    """Linear-interpolated percentile (same as numpy's default), ``pct`` in [0, 100]."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * pct / 100.0
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True)
class Spread:
    """How a series of values is distributed."""

    n: int
    mean: float
    median: float
    p5: float
    p95: float
    cv: float


def spread(values: Sequence[float]) -> Spread | None:
    """Count, mean, median, p5/p95 and CV of ``values``; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return Spread(n=len(ordered), mean=statistics.fmean(ordered), median=statistics.median(ordered),
                  p5=percentile(ordered, 5), p95=percentile(ordered, 95),
                  cv=coefficient_of_variation(values))


def step_time_stats(step_times: Sequence[float], skip: int) -> StepTimeStats | None:
    """Statistics of the step times after the warm-up; None when the log gave none."""
    measured = spread(after_warmup(step_times, skip))
    if measured is None:
        return None
    return StepTimeStats(n=measured.n, mean=measured.mean, median=measured.median,
                         p5=measured.p5, p95=measured.p95, cv=measured.cv)


def total_work_rate(throughputs: Sequence[float], step_times: Sequence[float], skip: int) -> float | None:
    """Units (tokens, samples) processed in the measured steps over the time they took:
    ``sum(throughput_i * time_i) / sum(time_i)`` after the warm-up.

    FINAL_RESULT is the mean of the per-step rates (the seeds' convention), which weighs a
    slow step as much as a fast one; this is the figure a wall clock gives. None when the
    series are missing or of different lengths (the two cannot be paired step by step).
    """
    if not throughputs or len(throughputs) != len(step_times):
        return None
    rates, times = after_warmup(throughputs, skip), after_warmup(step_times, skip)
    elapsed = math.fsum(times)
    if elapsed <= 0:
        return None
    return math.fsum(r * t for r, t in zip(rates, times)) / elapsed


def geometric_mean(values: Sequence[float]) -> float | None:
    """exp(mean(log v)) of positive values; None for none (the mean of ratios B/A that
    treats a 2x speed-up and a 2x slow-down as cancelling out)."""
    positive = [v for v in values if v > 0]
    if not positive or len(positive) != len(values):
        return None
    return math.exp(math.fsum(math.log(v) for v in positive) / len(positive))


#: Confidence of the interval behind "beyond noise" (``harness compare``, the report's history).
NOISE_CONFIDENCE = 0.95
#: Fewest per-step samples a side needs for the interval; with fewer, "unknown".
MIN_NOISE_SAMPLES = 5
BOOTSTRAP_RESAMPLES = 4000
#: The resampling is seeded, so that one comparison always gives one answer.
BOOTSTRAP_SEED = 20261127


@dataclass(frozen=True)
class RatioInterval:
    """median(B) / median(A) of two samples with its bootstrap confidence interval."""

    ratio: float
    low: float
    high: float
    confidence: float
    n_a: int
    n_b: int

    @property
    def beyond_noise(self) -> bool:
        """Whether the interval excludes 1: the two differ at this confidence."""
        return self.low > 1.0 or self.high < 1.0

    def describe(self) -> str:
        return (f"{self.confidence:.0%} CI of B/A {self.low:.3f}-{self.high:.3f} "
                f"(bootstrap of per-step medians, {self.n_a} and {self.n_b} steps)")


def ratio_of_medians_interval(a: Sequence[float], b: Sequence[float],
                              confidence: float = NOISE_CONFIDENCE,
                              resamples: int = BOOTSTRAP_RESAMPLES) -> RatioInterval | None:
    """Percentile-bootstrap confidence interval of median(b) / median(a).

    Each side is resampled with replacement on its own, ``resamples`` times; the interval is
    the central ``confidence`` share of the resampled ratios. The samples are per-step figures
    (throughputs) of the measured steps; treating steps as independent, it sees step-to-step
    noise, not a drift that lasts a whole run (repeats show that). None when a side has fewer
    than MIN_NOISE_SAMPLES values or a non-positive median.
    """
    import numpy as np

    if len(a) < MIN_NOISE_SAMPLES or len(b) < MIN_NOISE_SAMPLES:
        return None
    values_a, values_b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    median_a, median_b = float(np.median(values_a)), float(np.median(values_b))
    if median_a <= 0 or median_b <= 0:
        return None
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    ratios = np.concatenate([_resampled_medians(rng, values_b, count) / _resampled_medians(rng, values_a, count)
                             for count in _batches(resamples, max(len(values_a), len(values_b)))])
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(ratios, [tail, 100.0 - tail])
    return RatioInterval(median_b / median_a, float(low), float(high), confidence,
                         len(values_a), len(values_b))


def _batches(total: int, width: int) -> list[int]:
    """``total`` resamples in batches of at most ~2 million values (a long log has many steps)."""
    size = max(1, 2_000_000 // max(1, width))
    return [min(size, total - start) for start in range(0, total, size)]


def _resampled_medians(rng, values, count: int):
    import numpy as np

    return np.median(rng.choice(values, size=(count, len(values))), axis=1)
