"""Recording a run: the result built from an attempt's repeats (the median over them, MFU and
energy) and written to the run folder and the results database."""

from __future__ import annotations

import sqlite3
import statistics

from harness.dispatch import HookRouter
from harness.errors import StorageError
from harness.fingerprint import environment_fingerprint
from harness.logparse.summary import LogReading
from harness.models import BenchmarkResult
from harness.models.context import RunContext
from harness.models.result import NodeRecord, RepeatResult
from harness.provenance import run_provenance
from harness.result_builder import RUN_METHOD, FinalResult, build_result, modified_keys, repeat_figures
from harness.results_io import write_run_files
from harness.health import uniform_guess_loss
from harness.runner.attempt import Attempt
from harness.runner.request import RunReport, RunRequest, utcnow
from harness.store import DamagedStoreError, ResultStore


def record_result(context: RunContext, request: RunRequest,
                  attempt: Attempt, nodes: list[NodeRecord] | None = None) -> RunReport:
    """Build the result and write it to the run folder and the database; each write is tried
    even when another failed (a full disk), and what failed is one StorageError."""
    settings = context.config.settings
    repeats = attempt.repeats
    status = attempt.status or next((r.status for r in repeats if r.status != "success"), "success")
    if not repeats and status == "success":  # nothing ran and nothing said why
        status, attempt.reason = "failed", "no repeat ran"
    failed_nodes = [n for n in nodes or [] if n.node_rank and n.status not in ("success", "missing")]
    if failed_nodes:  # the other nodes' failures first: they are usually the cause
        named = "; ".join(f"node {n.node_rank} ({n.status}): {n.reason or 'no reason given'}"
                          for n in failed_nodes)
        attempt.reason = f"{named}; node 0: {attempt.reason}" if attempt.reason else named
        if status == "success":
            status = "failed"
    result = build_result(
        run_id=context.run_id, config=context.config, reading=attempt.first,
        log_format=repeats[0].log_format if repeats else None,
        final=_final_result(repeats, attempt.first, settings.skip_steps), unit=context.case.unit,
        step_time=repeats[0].step_time if repeats else None,
        status=status,  # type: ignore[arg-type]
        failure_reason=attempt.reason,
        framework_version=attempt.env.framework_version if attempt.env else None,
        environment=environment_fingerprint(attempt.env), started_at=attempt.started,
        finished_at=utcnow(),
        log_file=repeats[0].log_file if repeats else "train.log",
        peak_memory_bytes=attempt.peak_memory, devices=context.devices, dataset=attempt.dataset,
        repeats=repeats, device_metrics=attempt.extras, modified=modified_keys(context.config),
        readback=attempt.first_readback,
        uniform_loss=uniform_guess_loss(context.case, context.config.params),
        provenance=run_provenance(attempt.router, attempt.scripts, context.vendor_config_path,
                                  attempt.launches)
        if attempt.router is not None else None,
    )
    if attempt.router is not None and attempt.env is not None:
        result.efficiency = _efficiency(attempt.router, context, result)
    result.memory_estimate = context.memory_estimate
    result.job_id, result.nodes = context.job_id, list(nodes or [])
    run_dir = context.run_dir
    problems: list[str] = []
    legacy_path = run_dir / "index"
    try:
        legacy_path = write_run_files(run_dir, result, context.case)
    except OSError as exc:
        problems.append(f"result files in {run_dir}: {exc.strerror or exc}")
    try:
        ResultStore(request.output).add(result, run_dir)
    except DamagedStoreError as exc:
        problems.append(str(exc))
    except (OSError, sqlite3.Error) as exc:
        problems.append(f"database {ResultStore(request.output).path}: {exc}")
    report = RunReport(result=result, run_dir=run_dir, legacy_path=legacy_path)
    if problems:
        raise StorageError(f"run {result.status}, but could not record its result: "
                           + "; ".join(problems), report=report)
    return report


def _final_result(repeats: list[RepeatResult], first: LogReading | None,
                  skip_steps: int) -> FinalResult | None:
    """The median over the successful repeats of their FINAL_RESULT (the median step
    throughput is the first repeat's)."""
    finals = [r.final_result for r in repeats if r.status == "success" and r.final_result]
    if not finals:
        return None
    method = RUN_METHOD + (f", median of {len(finals)} repeats" if len(finals) > 1 else "")
    figures = repeat_figures(first, skip_steps)
    return FinalResult(value=statistics.median(finals), median=figures.median, method=method,
                       total_work=figures.total_work)


def _efficiency(router: HookRouter, context: RunContext, result: BenchmarkResult):
    """MFU and energy per unit from the plugins' FLOPs, peak and power (none when unknown)."""
    from harness.models.efficiency import compute_efficiency

    if result.throughput is None:
        return None
    flops = router.model_flops(context)
    peak = router.device_peak_flops(context.devices, context.config.settings.precision)
    power = result.device_metrics.get("busy_power_w")
    return compute_efficiency(
        throughput=result.throughput.value, unit=result.throughput.unit,
        world_size=context.config.settings.world_size,
        flops=flops, peak_flops_per_device=peak,
        busy_power_w=float(power) if isinstance(power, (int, float)) else None,
    )
