"""Recorded runs as rows with stable column names (``harness results export``).

The columns are part of the interface: scripts and spreadsheets read them by name, so a column
is only ever added (at the end), never renamed or removed. The README lists them.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any, Iterable

from harness.models import BenchmarkResult
from harness.models.result import RepeatResult
from harness.report.noise import repeat_cv, repeat_values, run_noise

MIB = 1024 * 1024

#: One row per run, in this order.
RUN_COLUMNS: tuple[str, ...] = (
    "run_id", "started_at", "finished_at", "case", "model", "framework", "framework_version",
    "framework_build", "vendor", "device", "scale", "nnodes", "nproc", "world_size", "run_mode",
    "precision", "micro_batch_size", "global_batch_size", "grad_accum_steps", "hardware_config",
    "status", "final_result", "unit", "final_result_per_device", "median_step_throughput",
    "total_work", "method", "step_time_median_s", "step_time_p5_s", "step_time_p95_s",
    "step_time_cv", "repeats", "repeat_cv", "noise_cv", "noise_source", "max_steps",
    "skip_steps", "steps_completed", "loss_first", "loss_final", "peak_memory_mib", "mfu",
    "energy_per_unit_j", "config_hash", "harness_version", "harness_git_sha", "source",
    "failure_reason", "run_dir",
)
#: Added after the run's columns with ``--repeats`` (one row per repeat).
REPEAT_COLUMNS: tuple[str, ...] = (
    "repeat_index", "repeat_status", "repeat_final_result", "repeat_step_time_cv",
    "repeat_duration_s", "repeat_log_file",
)


def run_row(result: BenchmarkResult, run_dir: str | None = None) -> dict[str, Any]:
    """The run's values under ``RUN_COLUMNS`` (None where it has none)."""
    t, s, e = result.throughput, result.step_time, result.efficiency
    noise = run_noise(result)
    device = result.devices.devices[0].name if result.devices and result.devices.devices else None
    row = {
        "run_id": result.run_id, "started_at": result.started_at.isoformat(),
        "finished_at": result.finished_at.isoformat(), "case": result.case, "model": result.model,
        "framework": result.framework, "framework_version": result.framework_version,
        "framework_build": result.environment.framework_build, "vendor": result.vendor,
        "device": device, "scale": result.config.scale, "nnodes": result.nnodes,
        "nproc": result.nproc, "world_size": result.nnodes * result.nproc,
        "run_mode": result.run_mode, "precision": result.precision,
        "micro_batch_size": result.micro_batch_size, "global_batch_size": result.global_batch_size,
        "grad_accum_steps": result.config.settings.grad_accum_steps,
        "hardware_config": result.config.hardware_config, "status": result.status,
        "final_result": t.value if t else None, "unit": t.unit if t else None,
        "final_result_per_device": t.per_device if t else None,
        "median_step_throughput": t.median if t else None,
        "total_work": t.total_work if t else None, "method": t.method if t else None,
        "step_time_median_s": s.median if s else None, "step_time_p5_s": s.p5 if s else None,
        "step_time_p95_s": s.p95 if s else None, "step_time_cv": s.cv if s else None,
        "repeats": len(repeat_values(result)), "repeat_cv": repeat_cv(result),
        "noise_cv": noise.cv, "noise_source": noise.source, "max_steps": result.max_steps,
        "skip_steps": result.skip_steps, "steps_completed": result.steps_completed,
        "loss_first": result.loss_first, "loss_final": result.loss_final,
        "peak_memory_mib": result.peak_memory_bytes / MIB if result.peak_memory_bytes else None,
        "mfu": e.mfu if e else None, "energy_per_unit_j": e.energy_per_unit_j if e else None,
        "config_hash": result.config_hash, "harness_version": result.environment.harness_version,
        "harness_git_sha": result.environment.harness_git_sha, "source": result.source,
        "failure_reason": result.failure_reason, "run_dir": run_dir,
    }
    return row


def repeat_row(repeat: RepeatResult) -> dict[str, Any]:
    return {
        "repeat_index": repeat.index, "repeat_status": repeat.status,
        "repeat_final_result": repeat.final_result,
        "repeat_step_time_cv": repeat.step_time.cv if repeat.step_time else None,
        "repeat_duration_s": repeat.duration_s, "repeat_log_file": repeat.log_file,
    }


def export_rows(results: Iterable[tuple[BenchmarkResult, str | None]],
                per_repeat: bool = False) -> list[dict[str, Any]]:
    """One row per run, or with ``per_repeat`` one per repeat (a run without repeats keeps
    one row with empty repeat columns)."""
    rows = []
    for result, run_dir in results:
        base = run_row(result, run_dir)
        if not per_repeat:
            rows.append(base)
            continue
        for repeat in result.repeats or [None]:
            extra = repeat_row(repeat) if repeat else dict.fromkeys(REPEAT_COLUMNS)
            rows.append({**base, **extra})
    return rows


def columns(per_repeat: bool) -> tuple[str, ...]:
    return RUN_COLUMNS + (REPEAT_COLUMNS if per_repeat else ())


def to_csv(rows: list[dict[str, Any]], per_repeat: bool) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(per_repeat), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return buffer.getvalue()


def to_jsonl(rows: list[dict[str, Any]]) -> str:
    return "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def write_export(text: str, destination: Path | None) -> None:
    """To a file (atomically) or, for None, stdout."""
    if destination is None:
        import sys

        sys.stdout.write(text)
        return
    from harness.results_io import atomic_write_text

    atomic_write_text(destination, text)
