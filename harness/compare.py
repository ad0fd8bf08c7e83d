"""Side-by-side comparison of recorded runs: two runs, two frameworks, or two result sets.

Each side is a list of recorded runs. Runs are paired by what makes them comparable (case,
vendor, scale, layout, precision, batch, accumulation and sweep label: everything but the
framework and the time they ran), and each pair gets the ratio B / A of FINAL_RESULT and
whether the difference exceeds the runs' own noise:

    noise(run) = CV of FINAL_RESULT over its repeats (2 or more), else its step-time CV
    beyond noise  <=>  |B/A - 1| > NOISE_SIGMAS * sqrt(noise(A)^2 + noise(B)^2)

Runs measured over different windows (steps, warm-up, learning rate and schedule, dataset,
seed: :func:`measurement_window`, built on ``harness.measurement_window``) are not paired
unless the caller allows it (``allow_different_windows``). A pair of different cases, or one
of different windows that the caller allowed, carries warnings: its ratio is not a
like-for-like figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from harness.errors import UserInputError
from harness.measurement_window import locked_values
from harness.models import BenchmarkResult
from harness.report.data import ReportFilter, ReportRun, load_runs
from harness.report.noise import Noise, run_noise
from harness.stats import geometric_mean
from harness.store import DB_NAME, ResultStore

NOISE_SIGMAS = 2.0  # a difference of two noise standard deviations: ~95% if noise were normal


def combined_noise(cv_a: float | None, cv_b: float | None) -> float | None:
    """Relative noise of the ratio of two figures from each one's CV (a side without an
    estimate adds nothing); None when neither has one."""
    parts = [cv for cv in (cv_a, cv_b) if cv is not None]
    return math.sqrt(math.fsum(p * p for p in parts)) if parts else None


def beyond_noise(ratio: float, cv_a: float | None, cv_b: float | None) -> bool | None:
    """Whether B/A = ``ratio`` differs from 1 by more than NOISE_SIGMAS x the combined noise
    (the rule of ``harness compare`` and ``harness certify compare``); None without noise."""
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
class Side:
    label: str
    runs: list[ReportRun]


@dataclass
class Pair:
    key: tuple
    a: BenchmarkResult
    b: BenchmarkResult
    noise_a: Noise
    noise_b: Noise

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

    @property
    def beyond_noise(self) -> bool | None:
        return beyond_noise(self.ratio, self.noise_a.cv, self.noise_b.cv)

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


@dataclass
class Comparison:
    label_a: str
    label_b: str
    pairs: list[Pair] = field(default_factory=list)
    only_a: list[ReportRun] = field(default_factory=list)
    only_b: list[ReportRun] = field(default_factory=list)
    #: Runs that matched but were measured over different windows: (A, B, key -> (A's, B's)).
    different_windows: list[tuple[ReportRun, ReportRun, dict]] = field(default_factory=list)

    def slower_than(self, pct: float, beyond_noise: bool = False) -> list[Pair]:
        """Pairs where B's throughput is more than ``pct`` percent below A's; with
        ``beyond_noise`` only those whose difference also exceeds the runs' noise (a pair
        without a noise estimate counts, so a gate never passes for want of data)."""
        return [p for p in self.pairs if p.slower_pct > pct
                and not (beyond_noise and p.beyond_noise is False)]

    @property
    def geometric_mean_ratio(self) -> float | None:
        """Geometric mean of the pairs' B/A: one figure for a whole result set."""
        return geometric_mean([p.ratio for p in self.pairs])

    def to_dict(self) -> dict:
        return {
            "a": self.label_a, "b": self.label_b, "noise_sigmas": NOISE_SIGMAS,
            "pairs": [{
                "what": p.describe(), "run_a": p.a.run_id, "run_b": p.b.run_id,
                "framework_a": p.a.framework, "framework_b": p.b.framework,
                "value_a": p.value_a, "value_b": p.value_b, "unit": p.unit,
                "ratio": p.ratio, "change_pct": p.change * 100.0,
                "noise_a": p.noise_a.cv, "noise_a_source": p.noise_a.source,
                "noise_b": p.noise_b.cv, "noise_b_source": p.noise_b.source,
                "beyond_noise": p.beyond_noise, "warnings": p.warnings,
            } for p in self.pairs],
            "geometric_mean_ratio": self.geometric_mean_ratio,
            "only_a": [r.result.run_id for r in self.only_a],
            "only_b": [r.result.run_id for r in self.only_b],
            "different_windows": [{"run_a": a.result.run_id, "run_b": b.result.run_id,
                                   "keys": {k: list(v) for k, v in diff.items()}}
                                  for a, b, diff in self.different_windows],
        }


def comparison_key(run: ReportRun) -> tuple:
    """What must be equal for two runs to be compared (not the framework, not the time)."""
    r = run.result
    s = r.config.settings
    return (r.case, r.vendor, r.config.scale, r.nnodes, r.nproc, r.precision, r.micro_batch_size,
            s.grad_accum_steps, r.config.hardware_config or "", run.label or "")


def compare_sides(a: Side, b: Side, allow_different_windows: bool = False) -> Comparison:
    """Pair the successful runs of two sides by ``comparison_key``; runs whose measurement
    windows differ are listed apart instead of paired, unless ``allow_different_windows``."""
    ok_a = {comparison_key(r): r for r in a.runs if r.ok}
    ok_b = {comparison_key(r): r for r in b.runs if r.ok}
    comparison = Comparison(a.label, b.label)
    for key, run_a in ok_a.items():
        run_b = ok_b.get(key)
        if run_b is None:
            comparison.only_a.append(run_a)
            continue
        differences = window_differences(run_a.result, run_b.result)
        if differences and not allow_different_windows:
            comparison.different_windows.append((run_a, run_b, differences))
            continue
        comparison.pairs.append(_pair(key, run_a.result, run_b.result))
    comparison.only_b = [r for k, r in ok_b.items() if k not in ok_a]
    return comparison


def compare_runs(a: BenchmarkResult, b: BenchmarkResult,
                 allow_different_windows: bool = False) -> Comparison:
    """Two named runs, compared whatever their settings (same unit and, unless allowed,
    the same measurement window required)."""
    for result in (a, b):
        if result.status != "success" or result.throughput is None:
            raise UserInputError(f"run {result.run_id} did not succeed ({result.status}); "
                                 "it has no FINAL_RESULT to compare")
    if a.throughput.unit != b.throughput.unit:
        raise UserInputError(f"runs measure different units ({a.throughput.unit} vs "
                             f"{b.throughput.unit}); they cannot be compared")
    differences = window_differences(a, b)
    if differences and not allow_different_windows:
        raise UserInputError(
            f"runs {a.run_id} and {b.run_id} were measured over different windows ("
            + ", ".join(f"{k} {va} vs {vb}" for k, (va, vb) in differences.items())
            + "); pass --allow-different-windows to compare them anyway")
    comparison = Comparison(a.run_id, b.run_id)
    comparison.pairs.append(_pair((), a, b))
    return comparison


def pair_runs(key: tuple, a: BenchmarkResult, b: BenchmarkResult) -> Pair:
    """Two successful results side by side, with their noise (also used by report history)."""
    return Pair(key, a, b, run_noise(a), run_noise(b))


_pair = pair_runs


def load_side(spec: str, results: Path, filters: ReportFilter) -> Side | BenchmarkResult:
    """A results folder (every matching run in it) or a run id / prefix in ``results``."""
    path = Path(spec)
    if (path / DB_NAME).is_file():
        return Side(str(path), load_runs(path, filters))
    if not (results / DB_NAME).is_file():
        raise UserInputError(f"{spec!r} is not a results folder (no {DB_NAME}) and there is no "
                             f"results database at {results} to look it up as a run id")
    result = ResultStore(results).get(spec)
    if result is None:
        raise UserInputError(f"{spec!r} is neither a results folder nor a single run id (or unique "
                             f"prefix) in {results}; see `harness results list`")
    return result


def compare_frameworks(results: Path, framework_a: str, framework_b: str,
                       filters: ReportFilter, allow_different_windows: bool = False) -> Comparison:
    runs = load_runs(results, filters)
    side_a = Side(framework_a, [r for r in runs if r.result.framework == framework_a])
    side_b = Side(framework_b, [r for r in runs if r.result.framework == framework_b])
    for side in (side_a, side_b):
        if not side.runs:
            raise UserInputError(f"no recorded runs of framework {side.label!r} in {results} "
                                 f"({filters.describe()})")
    return compare_sides(side_a, side_b, allow_different_windows)
