"""Assembling a BenchmarkResult: one place for launched runs (``harness run``) and ingested
logs (``harness parse``), so both record the same fields by the same rules.

The callers differ only in what they know: a launched run knows its resolved config, devices,
environment and repeats; an ingested log knows what the log and the command line say. Both hand
over a :class:`~harness.logparse.summary.LogReading` of the (first) log and the FINAL_RESULT
they computed from it; everything else derived from the log is derived here.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Sequence

from harness.config_resolution import CLI_SOURCE, SWEEP_SOURCE, set_by_user
from harness.health import judge_health, peak_learning_rate
from harness.logparse.summary import LogReading
from harness.measurement_window import locked_keys_touched
from harness.models import BenchmarkResult, DeviceSet, ResolvedConfig
from harness.models.launch import DatasetInfo, RunStatus
from harness.models.result import (
    EnvironmentFingerprint, LogSummary, Provenance, RepeatResult, StepTimeStats, Throughput,
    micro_batch_of,
)
from harness.stats import (
    after_warmup, covers_past_warmup, first_record_after_warmup, mean_after_warmup, spread, step_time_stats,
    total_work_rate,
)

#: ``Throughput.method`` of the rule ``harness run`` applies to every repeat.
RUN_METHOD = "mean-after-warmup"


@dataclass(frozen=True)
class FinalResult:
    """FINAL_RESULT in the job's scope (all devices), with the median and how it was made."""

    value: float
    median: float | None
    method: str
    total_work: float | None = None  # units over the measured wall time (first repeat)


@dataclass(frozen=True)
class RepeatFigures:
    final: float | None
    median: float | None
    step_time: StepTimeStats | None
    total_work: float | None = None


def repeat_figures(reading: LogReading | None, skip_steps: int) -> RepeatFigures:
    """One launched repeat's FINAL_RESULT (mean throughput after the warm-up), its median,
    its step-time statistics and its total-work rate (units over the measured wall time)."""
    if reading is None:
        return RepeatFigures(None, None, None)
    summary = reading.summary
    # skip_steps counts training iterations: a log that prints every N iterations skips the
    # records that end inside the warm-up, not skip_steps records.
    skip = skip_steps
    if len(summary.throughput_steps) == len(summary.throughput):
        skip = first_record_after_warmup(summary.throughput_steps, skip_steps)
    step_skip = skip if len(summary.step_time) == len(summary.throughput) else skip_steps
    measured = spread(after_warmup(summary.throughput, skip))
    return RepeatFigures(final=mean_after_warmup(summary.throughput, skip),
                         median=measured.median if measured else None,
                         step_time=step_time_stats(summary.step_time, step_skip),
                         total_work=total_work_rate(summary.throughput, summary.step_time, skip))


def past_warmup(reading: LogReading | None, skip_steps: int) -> bool:
    """Whether the log has throughput past the ``skip_steps`` warm-up iterations (without it,
    FINAL_RESULT would be made of warm-up figures: :func:`harness.stats.after_warmup` keeps
    the last one)."""
    if reading is None or not reading.summary.throughput:
        return True  # no figure at all: log_verdict says so
    summary = reading.summary
    if len(summary.throughput_steps) == len(summary.throughput):
        return covers_past_warmup(summary.throughput_steps, skip_steps)
    return len(summary.throughput) > skip_steps


def log_verdict(status: RunStatus, reason: str | None, reading: LogReading | None,
                has_value: bool) -> tuple[RunStatus, str | None]:
    """A process that succeeded still failed when its log shows a failure or no figure."""
    if status != "success":
        return status, reason
    if reading is None:
        return "failed", "no log format could read the log (none registered under its name)"
    if reading.parsed.errors:
        return "failed", "log shows a failure: " + " | ".join(reading.parsed.errors[-3:])
    if not has_value:
        return "failed", "no completed training steps were found in the log"
    return status, reason


def modified_keys(config: ResolvedConfig) -> list[str]:
    """Measurement-window keys the command line (``--set``, ``--max-steps``) or a sweep file
    set: allowed for exploration, but the figure is then not the case's own. The smoke
    preset's and the case's values are the case's."""
    return locked_keys_touched([key for key, source in config.sources.items() if set_by_user(source)])


def modified_origins(result: BenchmarkResult) -> list[tuple[list[str], str]]:
    """The result's ``modified`` keys grouped by where they were set, for people:
    ``(["max_steps"], "on the command line")``, ``(["skip_steps"], "in sweep file x.toml")``."""
    groups: dict[str, list[str]] = {}
    for key in result.modified:
        source = result.config.sources.get(key, CLI_SOURCE)
        where = (f"in sweep file {source.removeprefix(SWEEP_SOURCE)}"
                 if source.startswith(SWEEP_SOURCE) else "on the command line")
        groups.setdefault(where, []).append(key)
    return [(keys, where) for where, keys in groups.items()]


def log_peak_memory(reading: LogReading | None) -> int | None:
    """Peak memory the log reports: the framework's own figure, else the largest step figure."""
    if reading is None:
        return None
    return reading.parsed.peak_memory_bytes or reading.summary.memory_bytes


def build_result(
    *,
    run_id: str,
    config: ResolvedConfig,
    reading: LogReading | None,
    log_format: str | None,
    final: FinalResult | None,
    unit: str,
    step_time: StepTimeStats | None,
    status: RunStatus,
    failure_reason: str | None,
    framework_version: str | None,
    environment: EnvironmentFingerprint,
    started_at: datetime,
    finished_at: datetime,
    log_file: str,
    peak_memory_bytes: int | None,
    devices: DeviceSet | None = None,
    dataset: DatasetInfo | None = None,
    repeats: Sequence[RepeatResult] = (),
    device_metrics: dict[str, Any] | None = None,
    notes: Iterable[str] = (),
    precision: str | None = None,
    source: str = "harness",
    source_sha256: str | None = None,
    modified: Sequence[str] = (),
    readback: dict[str, Any] | None = None,
    provenance: Provenance | None = None,
    uniform_loss: float | None = None,
) -> BenchmarkResult:
    """The result of one run or one ingested log.

    ``precision`` defaults to the config's; an ingested log passes what it reported (the
    config holds only the precisions a run can train in). The batch size is the config's
    (``micro_batch_of``: 0 where an ingested log did not say).
    ``uniform_loss`` is the case's uniform-guess loss (``harness.health.uniform_guess_loss``)
    for the health verdict, which reads the schedule's peak learning rate from the config's
    params (an ingested log's config holds none).
    """
    settings = config.settings
    batch = micro_batch_of(config)
    throughput = None
    if final is not None:
        throughput = Throughput(value=final.value, unit=unit,
                                per_device=final.value / settings.world_size,
                                median=final.median, method=final.method,
                                total_work=final.total_work)
    summary = reading.summary if reading is not None else None
    return BenchmarkResult(
        run_id=run_id,
        source=source,  # type: ignore[arg-type]
        source_sha256=source_sha256,
        case=config.case,
        model=config.model,
        framework=config.framework,
        framework_version=framework_version,
        vendor=config.vendor,
        devices=devices,
        nnodes=settings.nnodes,
        nproc=settings.nproc,
        run_mode=settings.run_mode,
        precision=precision or settings.precision,
        global_batch_size=_logged_global_batch(reading)
        or batch * settings.grad_accum_steps * settings.world_size,
        max_steps=settings.max_steps,
        steps_completed=(summary.last_step or 0) if summary else 0,
        skip_steps=settings.skip_steps,
        throughput=throughput,
        step_time=step_time,
        loss_first=summary.loss.first if summary else None,
        loss_final=summary.loss.last if summary else None,
        peak_memory_bytes=peak_memory_bytes,
        log_summary=_log_summary(reading, log_format, list(notes)),
        health=judge_health(summary.loss.points if summary else [], skip_steps=settings.skip_steps,
                            non_finite=summary.loss.non_finite if summary else 0,
                            uniform_loss=uniform_loss,
                            learning_rates=summary.learning_rate.points if summary else [],
                            peak_learning_rate=peak_learning_rate(config.params)),
        device_metrics=dict(device_metrics or {}),
        repeats=list(repeats),
        status=status,
        failure_reason=failure_reason,
        modified=list(modified),
        readback=readback,
        provenance=provenance,
        config_hash=config.config_hash,
        config=config,
        dataset=dataset,
        environment=environment,
        started_at=started_at,
        finished_at=finished_at,
        log_file=log_file,
    )


def _logged_global_batch(reading: LogReading | None) -> int | None:
    """The log's own global batch where it prints one: under tensor or pipeline parallelism
    only some processes hold data replicas, which the core cannot know."""
    logged = reading.parsed.meta.get("global_batch_size") if reading is not None else None
    if isinstance(logged, bool) or not isinstance(logged, (int, float)) or logged <= 0:
        return None
    return int(logged)


def _log_summary(reading: LogReading | None, log_format: str | None,
                 notes: list[str]) -> LogSummary | None:
    """Curves and facts of the (first) log, with the caller's notes and the log's last
    failure markers."""
    if reading is None:
        return None
    parsed, summary = reading.parsed, reading.summary
    return LogSummary(
        format=log_format or parsed.format,
        lines=reading.lines,
        steps_parsed=summary.count,
        first_step=summary.first_step,
        last_step=summary.last_step,
        framework_reported=parsed.framework_reported,
        loss_curve=summary.loss.points,
        learning_rate_curve=summary.learning_rate.points,
        meta={k: v for k, v in parsed.meta.items() if _is_plain(v)},
        notes=notes + [e for e in parsed.errors[-5:] if e not in notes],
    )


def _is_plain(value: Any) -> bool:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return True
    if isinstance(value, (list, tuple)):
        return len(value) <= 1000 and all(isinstance(v, (int, float, str)) for v in value)
    return False
