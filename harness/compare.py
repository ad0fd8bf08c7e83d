"""Side-by-side comparison of recorded runs: two runs, two frameworks, or two result sets.

Each side is a list of recorded runs. Runs are paired by what makes them comparable (case,
vendor, scale, layout, precision, batch, accumulation and sweep label: everything but the
framework and the time they ran), and each pair gets the ratio B / A of FINAL_RESULT and
whether the difference is beyond the runs' noise: a bootstrap confidence interval of the ratio
of their per-step medians that excludes 1 (:mod:`harness.report.pairing`), "unknown" where a
side has no per-step samples.

Runs measured over different windows (steps, warm-up, learning rate and schedule, dataset,
seed: :func:`harness.report.pairing.measurement_window`) are not paired
unless the caller allows it (``allow_different_windows``). A pair of different cases, or one
of different windows that the caller allowed, carries warnings: its ratio is not a
like-for-like figure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from harness.errors import UserInputError
from harness.models import BenchmarkResult
from harness.report.data import ReportFilter, ReportRun, load_runs
from harness.report.pairing import Pair, comparison_key, pair_runs, window_differences
from harness.stats import NOISE_CONFIDENCE, geometric_mean
from harness.store import DB_NAME, ResultStore

#: Reads a run's per-step samples (``harness.report.steps.log_step_samples``).
SampleReader = Callable[[ReportRun], "list[float] | None"]

@dataclass
class Side:
    label: str
    runs: list[ReportRun]


@dataclass
class Comparison:
    label_a: str
    label_b: str
    pairs: list[Pair] = field(default_factory=list)
    only_a: list[ReportRun] = field(default_factory=list)
    only_b: list[ReportRun] = field(default_factory=list)
    #: Runs that matched but were measured over different windows: (A, B, key -> (A's, B's)).
    different_windows: list[tuple[ReportRun, ReportRun, dict]] = field(default_factory=list)
    #: Cross-framework comparisons: case -> the stored equivalence check's statement (or why
    #: there is none), read by ``attach_equivalence``.
    equivalence: dict[str, str] = field(default_factory=dict)

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
            "a": self.label_a, "b": self.label_b, "noise_test": {
                "confidence": NOISE_CONFIDENCE,
                "method": "percentile bootstrap of median(B) / median(A) over the per-step "
                          "throughputs of the measured steps; beyond noise when the interval "
                          "excludes 1, null when a side has no per-step samples"},
            "pairs": [{
                "what": p.describe(), "run_a": p.a.run_id, "run_b": p.b.run_id,
                "framework_a": p.a.framework, "framework_b": p.b.framework,
                "value_a": p.value_a, "value_b": p.value_b, "unit": p.unit,
                "ratio": p.ratio, "change_pct": p.change * 100.0,
                "noise_a": p.noise_a.cv, "noise_a_source": p.noise_a.source,
                "noise_b": p.noise_b.cv, "noise_b_source": p.noise_b.source,
                "beyond_noise": p.beyond_noise, "warnings": p.warnings,
                "step_samples_a": len(p.samples_a or []), "step_samples_b": len(p.samples_b or []),
                "median_ratio": p.interval.ratio if p.interval else None,
                "median_ratio_ci": [p.interval.low, p.interval.high] if p.interval else None,
            } for p in self.pairs],
            "geometric_mean_ratio": self.geometric_mean_ratio,
            "only_a": [r.result.run_id for r in self.only_a],
            "only_b": [r.result.run_id for r in self.only_b],
            "different_windows": [{"run_a": a.result.run_id, "run_b": b.result.run_id,
                                   "keys": {k: list(v) for k, v in diff.items()}}
                                  for a, b, diff in self.different_windows],
            "equivalence": self.equivalence,
        }


def compare_sides(a: Side, b: Side, allow_different_windows: bool = False,
                  read_samples: SampleReader | None = None) -> Comparison:
    """Pair the successful runs of two sides by ``comparison_key``; runs whose measurement
    windows differ are listed apart instead of paired, unless ``allow_different_windows``.
    ``read_samples`` gives each run's per-step samples (without it: beyond noise unknown)."""
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
        comparison.pairs.append(_pair(key, run_a, run_b, read_samples))
    comparison.only_b = [r for k, r in ok_b.items() if k not in ok_a]
    return comparison


def _pair(key: tuple, a: ReportRun, b: ReportRun, read_samples: SampleReader | None) -> Pair:
    samples = [read_samples(run) if read_samples else None for run in (a, b)]
    return pair_runs(key, a.result, b.result, *samples)


def compare_runs(run_a: ReportRun, run_b: ReportRun, allow_different_windows: bool = False,
                 read_samples: SampleReader | None = None) -> Comparison:
    """Two named runs, compared whatever their settings (same unit and, unless allowed,
    the same measurement window required)."""
    a, b = run_a.result, run_b.result
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
    comparison.pairs.append(_pair((), run_a, run_b, read_samples))
    return comparison


def load_side(spec: str, results: Path, filters: ReportFilter) -> Side | ReportRun:
    """A results folder (every matching run in it) or a run id / prefix in ``results``."""
    path = Path(spec)
    if (path / DB_NAME).is_file():
        return Side(str(path), load_runs(path, filters))
    if not (results / DB_NAME).is_file():
        raise UserInputError(f"{spec!r} is not a results folder (no {DB_NAME}) and there is no "
                             f"results database at {results} to look it up as a run id")
    store = ResultStore(results)
    result = store.get(spec)
    if result is None:
        raise UserInputError(f"{spec!r} is neither a results folder nor a single run id (or unique "
                             f"prefix) in {results}; see `harness results list`")
    folder = store.run_dirs().get(result.run_id)
    return ReportRun(result, Path(folder) if folder else None)


def compare_frameworks(results: Path, framework_a: str, framework_b: str,
                       filters: ReportFilter, allow_different_windows: bool = False,
                       read_samples: SampleReader | None = None) -> Comparison:
    runs = load_runs(results, filters)
    side_a = Side(framework_a, [r for r in runs if r.result.framework == framework_a])
    side_b = Side(framework_b, [r for r in runs if r.result.framework == framework_b])
    for side in (side_a, side_b):
        if not side.runs:
            raise UserInputError(f"no recorded runs of framework {side.label!r} in {results} "
                                 f"({filters.describe()})")
    comparison = compare_sides(side_a, side_b, allow_different_windows)
    attach_equivalence(comparison, results)
    return comparison


def attach_equivalence(comparison: Comparison, results: Path) -> None:
    """For each case of a pair of two frameworks, what the newest stored equivalence check of
    both says (``harness equivalence`` keeps them under ``results/equivalence``)."""
    from harness.equivalence.result import latest_check

    for pair in comparison.pairs:
        frameworks = {pair.a.framework, pair.b.framework}
        case = pair.a.case
        if len(frameworks) < 2 or case in comparison.equivalence:
            continue
        check = latest_check(results, case, frameworks)
        comparison.equivalence[case] = (
            check.statement() if check is not None else
            f"no equivalence check of {' and '.join(sorted(frameworks))} in {results} "
            f"(`harness equivalence --case {case} --frameworks {','.join(sorted(frameworks))}`)")
