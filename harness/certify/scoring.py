"""Repeats and noise: the olympic score of a point and the checks on its repeats."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from harness.certify.checks import Check, failed, passed
from harness.stats import coefficient_of_variation, mean

#: Fewest repeats an olympic score is taken from: it drops the best and the worst.
OLYMPIC_MIN = 3


def olympic_score(values: Sequence[float]) -> float | None:
    """Mean after dropping the best and the worst value (MLPerf's olympic scoring); with
    fewer than three values, the plain mean (the repeats check fails such a point anyway)."""
    if not values:
        return None
    ordered = sorted(values)
    kept = ordered[1:-1] if len(ordered) >= OLYMPIC_MIN else ordered
    return mean(kept)


def repeat_cv(values: Sequence[float]) -> float | None:
    return coefficient_of_variation(values) if len(values) >= 2 else None


def check_repeats(statuses: Sequence[tuple[str, str | None]], requested: int,
                  max_failed: int, label: str) -> Check:
    """``statuses``: (status, reason) per repeat that ran. Fails when more than ``max_failed``
    repeats failed, or when fewer than three succeeded (no olympic score without them)."""
    failures = [(i, s, r) for i, (s, r) in enumerate(statuses, 1) if s != "success"]
    missing = requested - len(statuses)
    bad = len(failures) + max(0, missing)
    succeeded = len(statuses) - len(failures)
    detail = "; ".join(f"repeat {i}: {s}" + (f" ({r})" if r else "") for i, s, r in failures)
    if missing > 0:
        detail = (detail + "; " if detail else "") + f"{missing} of {requested} repeats did not run"
    if bad > max_failed:
        return failed("repeats", f"{bad} of {requested} repeats failed (at most {max_failed} may): {detail}", label)
    if succeeded < OLYMPIC_MIN:
        return failed("repeats", f"only {succeeded} successful repeats; olympic scoring needs {OLYMPIC_MIN}", label)
    note = f"; {detail}" if detail else ""
    return passed("repeats", f"{succeeded} of {requested} repeats succeeded{note}", label)


#: Scales the median absolute deviation to the standard deviation of normal data.
MAD_TO_SD = 1.4826


def robust_spread(values: Sequence[float]) -> float | None:
    """The median-based counterpart of the CV: 1.4826 x median |x - median| / median. One
    repeat slowed by a neighbour's burst of load moves it little (the CV a lot)."""
    if len(values) < 2:
        return None
    centre = statistics.median(values)
    if not centre:
        return None
    return MAD_TO_SD * statistics.median([abs(v - centre) for v in values]) / centre


def check_noise(values: Sequence[float], bound: float, label: str, robust: bool = False) -> Check:
    """The repeats' spread against the suite's bound: the CV, or with ``robust`` (smoke suites,
    which run on shared CPU machines) the median-based spread. Full suites keep the CV."""
    spread = robust_spread(values) if robust else repeat_cv(values)
    name = "median-based spread" if robust else "CV"
    if spread is None:
        return failed("noise", "fewer than two successful repeats: no noise estimate", label)
    if spread > bound:
        return failed("noise", f"{name} over repeats {spread:.2%} exceeds the suite's bound {bound:.0%}", label)
    return passed("noise", f"{name} over {len(values)} repeats {spread:.2%} <= {bound:.0%}", label)
