"""Two recorded runs side by side: the ratio of their FINAL_RESULT and whether the difference
is beyond their noise; the rule ``harness compare`` (:mod:`harness.compare`) and the report's
history share.

Beyond noise is a statistical test on the runs' per-step samples (the throughput of every
measured step, re-read from their logs): the 95% percentile-bootstrap confidence interval of
median(B) / median(A) (:func:`harness.stats.ratio_of_medians_interval`) excludes 1. A pair
where a side has no per-step samples (no readable log, fewer than 5 measured steps) is
"unknown", never "no". Each run's own noise, shown beside it, is the CV of FINAL_RESULT over
its repeats (2 or more), else its step-time CV.

``harness certify compare`` judges repeat scores of certification bundles, which carry no
per-step samples, by :func:`beyond_noise`: the ratio differs from 1 by more than
NOISE_SIGMAS x the combined CV.

Runs measured over different windows (steps, warm-up, learning rate and schedule, dataset,
seed: :func:`measurement_window`, built on ``harness.measurement_window``) carry warnings:
their ratio is not a like-for-like figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

from harness.measurement_window import locked_values
from harness.models import BenchmarkResult
from harness.report.data import ReportRun
from harness.report.noise import Noise, run_noise
from harness.stats import RatioInterval, ratio_of_medians_interval

NOISE_SIGMAS = 2.0  # a difference of two noise standard deviations: ~95% if noise were normal


def combined_noise(cv_a: float | None, cv_b: float | None) -> float | None:
    """Relative noise of the ratio of two figures from each one's CV (a side without an
    estimate adds nothing); None when neither has one."""
    parts = [cv for cv in (cv_a, cv_b) if cv is not None]
    return math.sqrt(math.fsum(p * p for p in parts)) if parts else None


def beyond_noise(ratio: float, cv_a: float | None, cv_b: float | None) -> bool | None:
    """Whether B/A = ``ratio`` differs from 1 by more than NOISE_SIGMAS x the combined noise
    (for figures without per-step samples: ``harness certify compare``); None without noise."""
    noise = combined_noise(cv_a, cv_b)
    return None if noise is None else abs(ratio - 1.0) > NOISE_SIGMAS * noise


def measurement_window(result: BenchmarkResult) -> dict[str, object]:
    """What a FINAL_RESULT was measured over: the locked keys of the run's config
    (``harness.measurement_window``: steps, warm-up, learning-rate schedule, dataset size,
    seed) and the dataset it read. Two results are like for like only when these agree."""
    window: dict[str, object] = dict(locked_values(result.config))
    dataset = result.dataset
    window["dataset"] = (dataset.kind, dataset.synthesized) if dataset else None
    return window


def window_differences(a: BenchmarkResult, b: BenchmarkResult) -> dict[str, tuple]:
    """Fields of the measurement windows that differ: name -> (value in A, value in B)."""
    window_a, window_b = measurement_window(a), measurement_window(b)
    return {key: (window_a.get(key), window_b.get(key))
            for key in sorted(set(window_a) | set(window_b)) if window_a.get(key) != window_b.get(key)}


def windows_match(a: BenchmarkResult, b: BenchmarkResult) -> bool:
    """Whether two results were measured over the same window (see :func:`measurement_window`)."""
    return not window_differences(a, b)


def pair_warnings(a: BenchmarkResult, b: BenchmarkResult) -> list[str]:
    """Why the ratio of two results may not be a like-for-like figure."""
    warnings = []
    if a.case != b.case:
        warnings.append(f"different cases ({a.case} vs {b.case})")
    differences = window_differences(a, b)
    if differences:
        warnings.append("different measurement windows (" + ", ".join(
            f"{key} {_window_text(va)} vs {_window_text(vb)}" for key, (va, vb) in differences.items()) + ")")
    return warnings


def _window_text(value) -> str:
    if isinstance(value, tuple):
        return f"{value[0]}{' synthetic' if value[1] else ''}"
    return str(value)


@dataclass
class Pair:
    key: tuple
    a: BenchmarkResult
    b: BenchmarkResult
    noise_a: Noise
    noise_b: Noise
    #: Per-step throughputs of the measured steps; None where a run's log was not read.
    samples_a: list[float] | None = None
    samples_b: list[float] | None = None

    @property
    def value_a(self) -> float:
        return self.a.throughput.value

    @property
    def value_b(self) -> float:
        return self.b.throughput.value

    @property
    def unit(self) -> str:
        return self.a.throughput.unit

    @property
    def ratio(self) -> float:
        """B / A: above 1 means B is faster (higher throughput)."""
        return self.value_b / self.value_a

    @property
    def change(self) -> float:
        return self.ratio - 1.0

    @property
    def slower_pct(self) -> float:
        """How much slower B is than A, in percent (negative when B is faster)."""
        return -self.change * 100.0

    @property
    def noise(self) -> float | None:
        """Combined relative noise of the two runs; None when neither has an estimate."""
        return combined_noise(self.noise_a.cv, self.noise_b.cv)

    @cached_property
    def interval(self) -> RatioInterval | None:
        """The confidence interval of median(B) / median(A) over the per-step samples; None
        when a side has too few (or none)."""
        if not self.samples_a or not self.samples_b:
            return None
        return ratio_of_medians_interval(self.samples_a, self.samples_b)

    @property
    def beyond_noise(self) -> bool | None:
        """Whether the per-step samples differ at NOISE_CONFIDENCE; None (unknown) when a side
        has no per-step samples."""
        interval = self.interval
        return None if interval is None else interval.beyond_noise

    @property
    def warnings(self) -> list[str]:
        return pair_warnings(self.a, self.b)

    def describe(self) -> str:
        first, second = _describe(self.a, self.key), _describe(self.b, self.key)
        return first if first == second else f"{first} vs {second}"


def _describe(r: BenchmarkResult, key: tuple) -> str:
    text = (f"{r.case} {r.vendor} {r.nnodes}x{r.nproc} {r.precision} bs{r.micro_batch_size}")
    if r.modified:
        text += f" [modified: {', '.join(r.modified)}]"
    if r.config.settings.grad_accum_steps > 1:
        text += f" acc{r.config.settings.grad_accum_steps}"
    if key and key[-1]:
        text += f" {key[-1]}"
    if r.config.scale != "full":
        text += f" ({r.config.scale})"
    return text


def comparison_key(run: ReportRun) -> tuple:
    """What must be equal for two runs to be compared (not the framework, not the time)."""
    r = run.result
    s = r.config.settings
    return (r.case, r.vendor, r.config.scale, r.nnodes, r.nproc, r.precision, r.micro_batch_size,
            s.grad_accum_steps, r.config.hardware_config or "", run.label or "")


def pair_runs(key: tuple, a: BenchmarkResult, b: BenchmarkResult,
              samples_a: list[float] | None = None, samples_b: list[float] | None = None) -> Pair:
    """Two successful results side by side, with their noise and per-step samples (also used
    by report history)."""
    return Pair(key, a, b, run_noise(a), run_noise(b), samples_a, samples_b)
