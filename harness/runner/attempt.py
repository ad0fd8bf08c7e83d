"""One attempt at a planned run: its repeats launched one after another (each timed by a
StepClock), each repeat's log read and checked, and what ran kept in an Attempt so that an
interruption at any point still records it."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.dispatch import HookRouter
from harness.logparse.summary import LogReading, reading_of, stream_log
from harness.models import ParsedLog, ProcessOutcome, ResolvedConfig
from harness.models.context import RunContext
from harness.models.result import LaunchRecord, RepeatResult
from harness.readback import ReadbackCheck, check_log
from harness.result_builder import log_peak_memory, log_verdict, past_warmup, repeat_figures
from harness.runner.observer import RunObserver, StepClock
from harness.runner.sealed_launch import (config_file_changes, launch_record, read_import_records,
                                          repeat_nonce, restore_config_file, sealed_launch,
                                          shadowed_problem, vendor_changes)
from harness.witness import Witness, logged_rate, logged_step_time, witness_problem

if TYPE_CHECKING:
    from harness.app import Harness
    from harness.models import DatasetInfo, ExecutionEnv, LaunchSpec


def read_log(router: HookRouter, context: RunContext, launch: LaunchSpec,
             log_path: Path) -> LogReading | None:
    """Read a repeat's log once: with the framework's ``parse_log`` where it implements one
    (its ParsedLog wins), else with the registered LogFormat the launch declared. None when
    neither can read it."""
    parsed: ParsedLog | None = router.parse_log(context, log_path)
    if parsed is not None:
        return reading_of(parsed)
    formats = router.registry.log_formats
    if launch.log_format not in formats:
        return None
    return stream_log(log_path, formats.get(launch.log_format), **log_hints(context))


def log_hints(context: RunContext) -> dict[str, int | None]:
    """What a run's log may not say but its config knows: process count, micro batch and
    sequence length (per-process figures are scaled to the job, samples to tokens)."""
    return config_log_hints(context.config)


def config_log_hints(config: ResolvedConfig) -> dict[str, int | None]:
    """``log_hints`` from a resolved config alone (re-reading a recorded run's log)."""
    settings = config.settings
    seq_len = config.params.get("seq_len")
    return {"gpus": settings.world_size, "batch_size": settings.micro_batch_size,
            "seq_len": int(seq_len) if isinstance(seq_len, (int, float)) else None}


def _summarise_repeat(
    context: RunContext, index: int, outcome: ProcessOutcome, reading: LogReading | None,
    log_format: str, readback: ReadbackCheck, witness: Witness, builtin_scripts: bool,
) -> tuple[RepeatResult, str | None]:
    """Turn one repeat's outcome, log, read-back check and the harness's own witness of its
    output into a RepeatResult and a failure reason. A run that finished but trained something
    other than its config, or whose log is not what the harness saw, is invalid."""
    figures = repeat_figures(reading, context.config.settings.skip_steps)
    status, reason = log_verdict(outcome.status, outcome.reason, reading,
                                 has_value=figures.final is not None)
    if status == "success" and not readback.ok:
        status, reason = "invalid", readback.reason()
    skip = context.config.settings.skip_steps
    if status == "success" and not past_warmup(reading, skip):
        last = reading.summary.last_step if reading is not None else None
        status, reason = "invalid", (
            f"no step past the {skip} warm-up steps (skip_steps) was logged (the last logged step "
            f"is {last}): FINAL_RESULT would be a warm-up figure")
    if status == "success":
        logged = logged_rate(figures, reading, skip)
        # A `harness equivalence` run records its traces between steps, outside the script's
        # step timer, so its step lines arrive later than the steps they time; its speed is no
        # result (the check compares losses and weights), so only its log's capture is witnessed.
        timed = builtin_scripts and context.config.equivalence is None
        problem = witness_problem(Path(outcome.log_path), reading, logged, witness,
                                  context.case.unit, timed=timed,
                                  logged_step_s=logged_step_time(figures))
        if problem:
            status, reason = "invalid", problem
    repeat = RepeatResult(
        index=index,
        status=status,
        final_result=figures.final,
        step_time=figures.step_time,
        log_file=Path(outcome.log_path).name,
        log_format=log_format,
        duration_s=outcome.duration_s,
        witness=witness,
    )
    return repeat, reason


@dataclass
class Attempt:
    """What one run produced so far: kept up to date so that an interruption at any point
    still records everything that ran."""

    started: datetime
    stage: str = "environment preparation"
    launched: bool = False
    env: ExecutionEnv | None = None
    dataset: DatasetInfo | None = None
    repeats: list[RepeatResult] = field(default_factory=list)
    first: LogReading | None = None
    first_readback: dict[str, Any] | None = None
    scripts: list[str] = field(default_factory=list)
    reason: str | None = None
    status: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    peak_memory: int | None = None
    router: HookRouter | None = None  # the run's hook calls, for provenance and efficiency
    outcomes: list[ProcessOutcome] = field(default_factory=list)
    launches: list[LaunchRecord] = field(default_factory=list)  # the core's launch of each repeat

    def fail(self, status: str, reason: str) -> None:
        if self.status is None:
            self.status, self.reason = status, reason


def run_repeats(harness: Harness, context: RunContext, observer: RunObserver,
                attempt: Attempt) -> None:
    settings = context.config.settings
    # The run's router continues the planner's record: provenance covers planning and running.
    router = attempt.router = harness.router(context)
    if context.memory_estimate is not None:
        from harness.memory_planner import planner_note

        observer.stage("memory", planner_note(context))
    observer.stage("environment", f"framework {context.framework}")
    attempt.env = router.prepare_env(context)
    attempt.stage = "data preparation"
    observer.stage("data", f"dataset {context.case.dataset}")
    attempt.dataset = router.prepare_data(context)
    flops = router.model_flops(context)
    # Built-in frameworks' scripts all print a read-back line and a line as each step ends; a
    # third-party framework that prints none is recorded as not read back rather than failed,
    # and its step lines are not held to the harness's clock.
    readback_required = harness.is_builtin(router.framework_owner(context.framework))

    total = context.repeats
    for index in range(1, total + 1):
        attempt.stage = f"repeat {index}"
        ctx = context.model_copy(update={"repeat_index": index})
        launch = router.run(ctx, attempt.env, attempt.dataset)
        attempt.scripts += [s for s in launch.scripts if s not in attempt.scripts]
        log_path = context.run_dir / ("train.log" if index == 1 else f"train.r{index}.log")
        record_prefix = context.run_dir / f".imports.r{index}"
        nonce = None
        if readback_required:  # a built-in framework's script: the core's own launch of it
            changed = vendor_changes(router.framework_launch(ctx, attempt.env, attempt.dataset),
                                     launch, allowed_launch_env(harness, ctx.vendor))
            changed += config_file_changes(context.run_dir, ctx.config)
            if changed:
                restore_config_file(context.run_dir, ctx.config)
                attempt.fail("invalid", f"the {ctx.vendor} vendor's run wrapper "
                             f"{'; '.join(changed)}: a built-in script is launched by the harness")
                break
            # A fresh data order per repeat, but one order in every framework for equivalence.
            nonce = (repeat_nonce(ctx.job_id, settings.nnodes, index)
                     if ctx.config.equivalence is None else None)
            launch = sealed_launch(launch, record_prefix, data_nonce=nonce)
        observer.stage("train", f"repeat {index}/{total}")
        clock = StepClock(observer, harness.registry.log_formats.items)
        clock.start_repeat(ctx, settings.max_steps, launch.log_format)
        clock.capture_path = log_path
        wrapper_copy = context.run_dir / WRAPPER_COPIES / log_path.name
        attempt.launched = True
        try:
            outcome: ProcessOutcome = router.execute(ctx, launch, wrapper_copy, clock)
        finally:
            clock.end_repeat()
        outcome, sealed_problem = _own_capture(ctx, outcome, clock, log_path, wrapper_copy,
                                               builtin_script=readback_required)
        attempt.outcomes.append(outcome)
        if readback_required:
            edited = config_file_changes(context.run_dir, ctx.config)
            if edited:  # by an execute wrapper, or by the process itself
                restore_config_file(context.run_dir, ctx.config)
                sealed_problem = sealed_problem or (
                    f"{'; '.join(edited)} while the training process ran: the script may have read another config")
            imported, shadowed = read_import_records(record_prefix)
            attempt.launches.append(launch_record(index, launch, imported))
            sealed_problem = sealed_problem or shadowed_problem(shadowed) or (
                None if imported or outcome.status != "success" else
                "the training process did not report the files it imported (it was not started "
                "through the harness's bootstrap)")
        if context.node_rank:  # the training figures are node 0's
            if outcome.status != "success":
                attempt.fail(outcome.status, outcome.reason or outcome.status)
                break
            continue
        reading = read_log(router, ctx, launch, log_path)
        readback = check_log(
            log_path, ctx.config, device_kind=ctx.devices.kind, identifying=ctx.case.immutable,
            model_parameters=flops.model_parameters if flops is not None else None,
            required=readback_required, data_nonce=nonce)
        repeat, repeat_reason = _summarise_repeat(ctx, index, outcome, reading, launch.log_format,
                                                  readback, clock.witness(ctx.config, ctx.case.unit),
                                                  builtin_scripts=readback_required)
        repeat.data_nonce = nonce
        if sealed_problem and repeat.status in ("success", "invalid"):  # the cause comes first
            repeat.status, repeat_reason = "invalid", sealed_problem
        attempt.repeats.append(repeat)
        attempt.extras.update(outcome.extras)
        memory = log_peak_memory(reading)
        if memory:
            attempt.peak_memory = max(attempt.peak_memory or 0, memory)
        if index == 1:
            attempt.first, attempt.first_readback = reading, readback.readback
        if repeat.status != "success":
            attempt.fail(repeat.status,
                         f"repeat {index}: {repeat_reason}" if total > 1 else repeat_reason)
            break  # a failed or interrupted repeat ends the run; what ran is recorded


#: The run folder's subfolder where the vendor's execute wrappers get their copy of each log.
WRAPPER_COPIES = ".wrapper-copy"


def _own_capture(context: RunContext, outcome: ProcessOutcome, clock: StepClock, log_path: Path,
                 wrapper_copy: Path, builtin_script: bool) -> tuple[ProcessOutcome, str | None]:
    """The outcome pointed at the core's own capture of the log, and why the repeat is invalid
    (or None): for a built-in script the core's execute did not run (a vendor's execute
    replaced it), or an execute wrapper changed its copy of the log. The copy is removed."""
    from harness.provenance import sha256_file

    problem = None
    if not clock.capture_done:
        if builtin_script:
            problem = (f"the {context.vendor} vendor's execute replaced the harness's own execution "
                       "of the training process")
        if wrapper_copy.is_file() and not log_path.exists():
            wrapper_copy.replace(log_path)  # the only log there is, kept for the record
    else:
        try:
            changed = sha256_file(wrapper_copy) != sha256_file(log_path)
        except OSError:
            changed = True
        if changed:
            problem = (f"the {context.vendor} vendor's execute wrapper changed its copy of "
                       f"{log_path.name} (the harness keeps the log as captured)")
    wrapper_copy.unlink(missing_ok=True)
    try:
        wrapper_copy.parent.rmdir()
    except OSError:
        pass
    return outcome.model_copy(update={"log_path": str(log_path)}), problem


def allowed_launch_env(harness: Harness, vendor: str) -> frozenset[str]:
    """The variables the vendor's ``DeviceBackend`` lets its ``run`` wrapper set."""
    backend = harness.registry.vendors.get(vendor).backend
    return backend.allowed_launch_env() if backend is not None else frozenset()
