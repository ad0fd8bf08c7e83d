"""Aggregation methods: how one FINAL_RESULT follows from a log's step throughputs.

=================  ==========================================================================
method             rule
=================  ==========================================================================
``harness``        skip the first ``skip`` records (warm-up, default 10), arithmetic mean of
                   the rest; median, p5/p95 and CV are reported alongside. The rule of
                   ``harness run``.
``trimmed``        skip ``skip`` (default 10), sort, drop ``trim`` (default 5) from each end,
                   mean of the middle. The Paddle benchmark convention.
``harmonic-epoch`` harmonic mean of the per-epoch throughputs the log prints, after ``skip``
                   warm-up epochs (default 1). NVIDIA's DeepLearningExamples convention.
``framework``      the final figure the framework printed itself (e.g. DLLogger's
                   ``training_sequences_per_second``, ``train_throughput``, a Summary line).
``last``           the last logged step's throughput (FlagPerf's Megatron cases).
``analysis-py``    the seeds' ``analysis.py``: mean of the raw records after ``skip``
                   (default 0), then converted (for time records: batch x gpus / mean time).
=================  ==========================================================================

Default ``skip``/``trim`` values shrink to fit a log too short for them; values given
explicitly never do (the method then refuses with a clear error instead).

A format whose step throughput is per device (``meta["throughput_scope"] == "per_device"``,
e.g. the rank-0 log of a Paddle job) is scaled to the job total by the GPU count.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

from harness.errors import UserInputError
from harness.logparse.recorder import PER_DEVICE
from harness.logparse.summary import StepSummary
from harness.models import ParsedLog
from harness.stats import after_warmup, mean_after_warmup, spread

METHODS = ("harness", "trimmed", "harmonic-epoch", "framework", "last", "analysis-py")
#: ``mean-after-warmup`` is what ``harness run`` records as its method name.
ALIASES = {"mean-after-warmup": "harness", "mean": "harness", "harmonic": "harmonic-epoch",
           "paddle": "trimmed", "keyword": "analysis-py"}
DEFAULT_SKIP = {"harness": 10, "trimmed": 10, "harmonic-epoch": 1, "analysis-py": 0}
DEFAULT_TRIM = 5


@dataclass
class MethodOptions:
    skip: int | None = None
    trim: int | None = None


@dataclass
class Aggregate:
    """A FINAL_RESULT in the log's scope, with what produced it."""

    value: float
    method: str
    description: str
    used: int  # records (or epochs) that entered the value
    skipped: int
    median: float | None = None
    p5: float | None = None
    p95: float | None = None
    cv: float | None = None


def canonical_method(name: str) -> str:
    method = ALIASES.get(name, name)
    if method not in METHODS:
        raise UserInputError(f"unknown method {name!r}; valid methods: {', '.join(METHODS)}")
    return method


def _spread(values: Sequence[float]) -> dict:
    measured = spread(values)
    if measured is None:
        return {}
    return {"median": measured.median, "p5": measured.p5, "p95": measured.p95, "cv": measured.cv}


def _after_warmup(values: Sequence[float], skip: int, what: str) -> Sequence[float]:
    if len(values) <= skip:
        raise UserInputError(
            f"only {len(values)} {what} in the log, not more than the {skip} warm-up ones to skip; "
            f"lower --skip"
        )
    return values[skip:]


def aggregate(method: str, parsed: ParsedLog, summary: StepSummary,
              options: MethodOptions | None = None) -> Aggregate:
    """Apply ``method``; raises UserInputError when the log lacks what the method needs."""
    options = options or MethodOptions()
    method = canonical_method(method)
    skip = options.skip if options.skip is not None else DEFAULT_SKIP.get(method, 0)
    values = summary.throughput
    if method == "framework":
        if parsed.framework_reported is None:
            raise UserInputError(
                f"the {parsed.format} log has no throughput printed by the framework itself; "
                "use --method harness"
            )
        return Aggregate(parsed.framework_reported, method, "final figure printed by the framework",
                         used=1, skipped=0)
    if method == "harmonic-epoch":
        epochs = list(parsed.meta.get("epoch_throughput") or [])
        if not epochs:
            raise UserInputError(
                f"the {parsed.format} log prints no per-epoch throughput; use --method harness"
            )
        kept = _after_warmup(epochs, skip, "epoch figures")
        value = len(kept) / sum(1.0 / v for v in kept)
        return Aggregate(value, method, f"harmonic mean of {len(kept)} epoch throughputs after "
                         f"{skip} warm-up epoch(s)", used=len(kept), skipped=skip, **_spread(kept))
    if not values:
        raise UserInputError(f"the {parsed.format} log has no step throughput to aggregate")
    if method == "last":
        return Aggregate(values[-1], method, "throughput of the last logged step", used=1,
                         skipped=len(values) - 1)
    if method == "analysis-py":
        kept = _after_warmup(values, skip, "records")
        mode = parsed.meta.get("keyword_mode")
        times = summary.step_time
        if mode in (0, 2) and len(times) == len(values):
            mean_time = statistics.fmean(times[skip:])
            # Each record's throughput is (batch x gpus) / its time: recover that constant.
            samples_per_step = values[skip] * times[skip]
            value = samples_per_step / mean_time if mode == 0 else 1.0 / mean_time
            description = f"analysis.py: mean of {len(kept)} time records after {skip}, converted"
        else:
            value = statistics.fmean(kept)
            description = f"analysis.py: mean of {len(kept)} records after skipping {skip}"
        return Aggregate(value, method, description, used=len(kept), skipped=skip, **_spread(kept))
    if method == "trimmed":
        trim = options.trim if options.trim is not None else DEFAULT_TRIM
        if options.skip is None and len(values) <= skip:
            skip = 0  # a short log: the default warm-up would leave nothing
        kept = sorted(_after_warmup(values, skip, "records"))
        if options.trim is None:
            trim = min(trim, (len(kept) - 1) // 2)  # defaults shrink to fit a short log
        if len(kept) <= 2 * trim:
            raise UserInputError(
                f"{len(kept)} records after warm-up cannot lose {trim} from each end; lower --trim"
            )
        middle = kept[trim:len(kept) - trim] if trim else kept
        return Aggregate(statistics.fmean(middle), method,
                         f"skip {skip}, sort, drop {trim} lowest and {trim} highest, mean of "
                         f"{len(middle)}", used=len(middle), skipped=skip, **_spread(middle))
    # harness: the rule of `harness run` (a log shorter than the warm-up keeps its last record).
    kept = after_warmup(values, skip)
    return Aggregate(mean_after_warmup(values, skip), "harness",
                     f"mean of {len(kept)} records after skipping {len(values) - len(kept)} warm-up",
                     used=len(kept), skipped=len(values) - len(kept), **_spread(kept))


def is_per_device(parsed: ParsedLog, method: str) -> bool:
    """Whether the aggregate is for one device (the framework's own figures are job totals)."""
    return canonical_method(method) != "framework" and parsed.meta.get("throughput_scope") == PER_DEVICE
