"""How noisy a recorded run is: variation over its repeats, else over its measured steps."""

from __future__ import annotations

from dataclasses import dataclass

from harness.stats import coefficient_of_variation
from harness.models import BenchmarkResult

#: Repeats (or one repeat's steps) varying more than 3% are flagged "noisy": in the run's
#: summary, ``harness compare``, the report and the export (the one place this number lives).
DEFAULT_NOISE_THRESHOLD = 0.03
#: Scaling efficiency above this is flagged as suspicious: more than linear speed-up usually
#: means the smaller run was slowed down (contention, a cold cache), not a faster large one.
SUPERLINEAR_EFFICIENCY = 1.05


@dataclass(frozen=True)
class Noise:
    cv: float | None
    source: str  # "repeats" | "steps" | "none"
    repeats: int

    def describe(self) -> str:
        if self.cv is None:
            return "no noise estimate"
        if self.source == "repeats":
            return f"CV {self.cv:.1%} over {self.repeats} repeats"
        return f"step-time CV {self.cv:.1%} (one repeat)"


def repeat_values(result: BenchmarkResult) -> list[float]:
    """FINAL_RESULT of each successful repeat."""
    return [r.final_result for r in result.repeats
            if r.status == "success" and r.final_result is not None]


def repeat_cv(result: BenchmarkResult) -> float | None:
    values = repeat_values(result)
    return coefficient_of_variation(values) if len(values) >= 2 else None


def run_noise(result: BenchmarkResult) -> Noise:
    """The run's own noise: CV over repeats when it has two or more, else step-time CV."""
    values = repeat_values(result)
    if len(values) >= 2:
        return Noise(coefficient_of_variation(values), "repeats", len(values))
    if result.step_time is not None and result.step_time.n >= 2:
        return Noise(result.step_time.cv, "steps", len(values))
    return Noise(None, "none", len(values))


def noisy(cv: float | None, threshold: float = DEFAULT_NOISE_THRESHOLD) -> bool:
    """Whether a coefficient of variation is above the noise threshold (a fraction: 0.03 is 3%)."""
    return cv is not None and cv > threshold


def is_noisy(result: BenchmarkResult, threshold: float = DEFAULT_NOISE_THRESHOLD) -> bool:
    """Flagged when its own noise (:func:`run_noise`: CV over repeats, or step-time CV of a
    single repeat) exceeds ``threshold``."""
    return noisy(run_noise(result).cv, threshold)


def is_superlinear(efficiency: float) -> bool:
    """A scaling efficiency too good to be true (see ``SUPERLINEAR_EFFICIENCY``)."""
    return efficiency > SUPERLINEAR_EFFICIENCY
