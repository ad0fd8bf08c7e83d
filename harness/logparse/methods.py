"""Aggregation methods: how one FINAL_RESULT follows from a log's step throughputs.

=================  ==========================================================================
method             rule
=================  ==========================================================================
``harness``        skip the first ``skip`` training iterations (warm-up, default 10): a record
                   is used when every iteration it covers lies past the warm-up; arithmetic
                   mean of the records used; median, p5/p95 and CV alongside. The rule of
                   ``harness run``.
``trimmed``        skip ``skip`` iterations (default 10) the same way, sort, drop ``trim``
                   (default 5) from each end, mean of the middle. The Paddle benchmark
                   convention (which counts its warm-up in records: ``skip_records``).
``harmonic-epoch`` harmonic mean of the per-epoch throughputs the log prints, after ``skip``
                   warm-up epochs (default 1). NVIDIA's DeepLearningExamples convention.
``framework``      the final figure the framework printed itself (e.g. DLLogger's
                   ``training_sequences_per_second``, ``train_throughput``, a Summary line).
``last``           the last logged step's throughput (FlagPerf's Megatron cases).
``analysis-py``    the seeds' ``analysis.py``: mean of the raw records after ``skip``
                   (default 0), then converted (for time records: batch x gpus / mean time).
=================  ==========================================================================

``skip_records`` (``--skip-records``) counts the warm-up in logged records instead, for
conventions written that way ("drop the first 10 records"); it replaces ``skip``.

Default ``skip``/``trim`` values shrink to fit a log too short for them; values given
explicitly never do (the method then refuses with a clear error instead).

A format whose step throughput is per device (``meta["throughput_scope"] == "per_device"``,
e.g. the rank-0 log of a Paddle job) is scaled to the job total by the GPU count.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Sequence

from harness.errors import UserInputError
from harness.logparse.recorder import PER_DEVICE
from harness.logparse.summary import StepSummary
from harness.models import ParsedLog
from harness.stats import first_record_after_warmup, spread

METHODS = ("harness", "trimmed", "harmonic-epoch", "framework", "last", "analysis-py")
#: ``mean-after-warmup`` is what ``harness run`` records as its method name.
ALIASES = {"mean-after-warmup": "harness", "mean": "harness", "harmonic": "harmonic-epoch",
           "paddle": "trimmed", "keyword": "analysis-py"}
DEFAULT_SKIP = {"harness": 10, "trimmed": 10, "harmonic-epoch": 1, "analysis-py": 0}
DEFAULT_TRIM = 5


@dataclass
class MethodOptions:
    skip: int | None = None  # warm-up iterations
    trim: int | None = None
    skip_records: int | None = None  # warm-up in records instead (replaces skip)


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
    first_step: int | None = None  # the iterations covered by the records used
    last_step: int | None = None
    field: str | None = None  # framework: the field of the log the figure was taken from
    warnings: list[str] = dataclass_field(default_factory=list)


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


def _warmup_in_epochs(meta: dict, skip: int) -> int:
    """A warm-up of ``skip`` iterations in a log whose records are numbered by epoch: the
    epochs it touches (one epoch where the log does not say how many iterations one holds;
    every epoch of an MLPerf benchmark is longer than a warm-up of iterations)."""
    if skip <= 0:
        return 0
    per_epoch = meta.get("iterations_per_epoch")
    if isinstance(per_epoch, (int, float)) and per_epoch > 0:
        return int(-(-skip // per_epoch))
    return 1


def _warmup_start(summary: StepSummary, options: MethodOptions, skip: int, method: str,
                  meta: dict | None = None) -> tuple[int, str]:
    """Index of the first record used, and how the warm-up was counted (for the description)."""
    count = len(summary.throughput)
    if options.skip_records is not None:
        if count <= options.skip_records:
            raise UserInputError(
                f"only {count} records in the log, not more than the {options.skip_records} warm-up "
                "records to skip; lower --skip-records")
        return options.skip_records, f"{options.skip_records} warm-up records"
    steps = summary.throughput_steps
    if len(steps) != count:  # a plugin's records without step numbers: one record, one iteration
        steps = list(range(1, count + 1))
    if (meta or {}).get("step_unit") == "epoch":
        # Records numbered by epoch: the warm-up is counted in the log's own unit.
        epochs = _warmup_in_epochs(meta, skip)
        start = first_record_after_warmup(steps, epochs)
        return start, (f"{epochs} warm-up epoch{'s' if epochs != 1 else ''} (the log numbers its records "
                       f"by epoch; {skip} warm-up iterations lie in {'them' if epochs != 1 else 'it'})")
    start = first_record_after_warmup(steps, skip)
    if options.skip is not None and skip and start == count - 1 and steps[-1] - steps[0] < skip \
            and method == "trimmed":
        raise UserInputError(
            f"the log covers {steps[-1] - steps[0] + 1} iterations, not more than the {skip} warm-up "
            "iterations to skip; lower --skip")
    return start, f"{skip} warm-up iterations"


def _used_range(summary: StepSummary, start: int, end: int | None = None) -> dict:
    steps = summary.throughput_steps
    if len(steps) != len(summary.throughput) or not len(steps):
        return {}
    end = len(steps) if end is None else end
    return {"first_step": int(steps[start]), "last_step": int(steps[end - 1])}


def _few_records(used: int) -> list[str]:
    if used <= 2:
        return [f"the figure rests on {used} record{'s' if used != 1 else ''} only: "
                "too few to tell a steady speed from noise"]
    return []


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
        field = parsed.meta.get("framework_field")
        where = f" ({field})" if field else ""
        return Aggregate(parsed.framework_reported, method, f"final figure printed by the framework{where}",
                         used=1, skipped=0, field=field)
    if method == "harmonic-epoch":
        epochs = list(parsed.meta.get("epoch_throughput") or [])
        if not epochs:
            raise UserInputError(
                f"the {parsed.format} log prints no per-epoch throughput; use --method harness"
            )
        kept = _after_warmup(epochs, skip, "epoch figures")
        value = len(kept) / sum(1.0 / v for v in kept)
        return Aggregate(value, method, f"harmonic mean of {len(kept)} epoch throughputs after "
                         f"{skip} warm-up epoch(s)", used=len(kept), skipped=skip,
                         warnings=_few_records(len(kept)), **_spread(kept))
    if not values:
        raise UserInputError(f"the {parsed.format} log has no step throughput to aggregate")
    if method == "last":
        return Aggregate(values[-1], method, "throughput of the last logged step", used=1,
                         skipped=len(values) - 1, **_used_range(summary, len(values) - 1))
    if method == "analysis-py":
        # analysis.py counts its skip_steps in records (keyword mode knows no iterations).
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
        return Aggregate(value, method, description, used=len(kept), skipped=skip,
                         warnings=_few_records(len(kept)), **_spread(kept), **_used_range(summary, skip))
    if method == "trimmed":
        trim = options.trim if options.trim is not None else DEFAULT_TRIM
        if options.skip is None and options.skip_records is None and len(values) <= skip:
            skip = 0  # a short log: the default warm-up would leave nothing
        start, warmup = _warmup_start(summary, options, skip, method, parsed.meta)
        kept = sorted(values[start:])
        if options.trim is None:
            trim = min(trim, (len(kept) - 1) // 2)  # defaults shrink to fit a short log
        if len(kept) <= 2 * trim:
            raise UserInputError(
                f"{len(kept)} records after warm-up cannot lose {trim} from each end; lower --trim"
            )
        middle = kept[trim:len(kept) - trim] if trim else kept
        return Aggregate(statistics.fmean(middle), method,
                         f"skip {warmup} ({start} records), sort, drop {trim} lowest and {trim} highest, "
                         f"mean of {len(middle)}", used=len(middle), skipped=start,
                         warnings=_few_records(len(middle)), **_spread(middle), **_used_range(summary, start))
    # harness: the rule of `harness run` (a log shorter than the warm-up keeps its last record).
    start, warmup = _warmup_start(summary, options, skip, method, parsed.meta)
    kept = values[start:]
    warnings = _few_records(len(kept))
    if start == len(values) - 1 and len(values) > 1 and skip:
        warnings.insert(0, f"no record lies wholly past the {warmup}: only the last record is used")
    weights = _iterations_covered(summary, start, parsed.meta)
    if weights is not None:
        value = sum(w * v for w, v in zip(weights, kept)) / sum(weights)
        mean = f"mean of {len(kept)} records weighted by the iterations each covers"
    else:
        value, mean = statistics.fmean(kept), f"mean of {len(kept)} records"
    return Aggregate(value, "harness",
                     f"{mean} after skipping {warmup} ({start} records)",
                     used=len(kept), skipped=start, warnings=warnings, **_spread(kept),
                     **_used_range(summary, start))


def _iterations_covered(summary: StepSummary, start: int, meta: dict) -> list[int] | None:
    """Per record used, the iterations it covers, where records cover different numbers of
    them (a rate over 50 iterations weighs five times one over 10); None where they are alike,
    unknown, or numbered by epoch."""
    steps = summary.throughput_steps
    if len(steps) != len(summary.throughput) or start == 0 or meta.get("step_unit") == "epoch":
        return None  # the first record's span is unknown without the step before it
    covered = [int(steps[i]) - int(steps[i - 1]) for i in range(start, len(steps))]
    if any(c <= 0 for c in covered) or len(set(covered)) == 1:
        return None
    return covered


def is_per_device(parsed: ParsedLog, method: str) -> bool:
    """Whether the aggregate is for one device (the framework's own figures are job totals)."""
    return canonical_method(method) != "framework" and parsed.meta.get("throughput_scope") == PER_DEVICE
