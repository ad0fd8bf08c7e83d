"""Recorded results made by hand, so report and compare tests know every number exactly."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from harness.models import (
    BenchmarkResult,
    DeviceInfo,
    DeviceSet,
    ResolvedConfig,
    RunSettings,
    StepTimeStats,
    Throughput,
)
from harness.models.result import EnvironmentFingerprint, RepeatResult
from harness.store import ResultStore

START = datetime(2026, 11, 21, 12, 0, tzinfo=timezone.utc)


def make_result(run_id: str, *, value: float | None = 100.0, repeats: list[float] | None = None,
                framework: str = "pytorch", case: str = "gpt3_125M", nproc: int = 1,
                precision: str = "fp32", batch: int = 8, status: str = "success",
                step_cv: float = 0.01, minutes: int = 0, vendor: str = "cpu",
                unit: str = "tokens/s", params: dict | None = None,
                peak_memory_mib: float | None = 512.0, step_median_s: float = 0.25) -> BenchmarkResult:
    settings = RunSettings(precision=precision, micro_batch_size=batch, nproc=nproc, max_steps=20,
                           skip_steps=5)
    config = ResolvedConfig(case=case, model="gpt", framework=framework, vendor=vendor, scale="smoke",
                            settings=settings, params=params or {"seq_len": 128})
    finals = repeats if repeats is not None else ([value] if value is not None else [])
    started = START + timedelta(minutes=minutes)
    ok = status == "success" and value is not None
    return BenchmarkResult(
        run_id=run_id, case=case, model="gpt", framework=framework, framework_version="9.9",
        vendor=vendor,
        devices=DeviceSet(vendor=vendor, kind="cpu" if vendor == "cpu" else "gpu",
                          devices=[DeviceInfo(index=0, name="Test CPU")], driver_version="1.0"),
        nnodes=1, nproc=nproc, run_mode="sp" if nproc == 1 else "mp", precision=precision,
        global_batch_size=batch * nproc, max_steps=20, steps_completed=20,
        skip_steps=5,
        throughput=Throughput(value=value, unit=unit, per_device=value / nproc) if ok else None,
        step_time=StepTimeStats(n=15, mean=step_median_s, median=step_median_s, p5=step_median_s,
                                p95=step_median_s, cv=step_cv) if ok else None,
        loss_first=7.0, loss_final=5.0,
        peak_memory_bytes=int(peak_memory_mib * 1024 * 1024) if peak_memory_mib else None,
        repeats=[RepeatResult(index=i + 1, status="success", final_result=v, log_file="train.log",
                              duration_s=10.0) for i, v in enumerate(finals)] if ok else
                [RepeatResult(index=1, status=status, final_result=None, log_file="train.log",
                              duration_s=1.0)],
        status=status, failure_reason=None if ok else "training process exited with code 1",
        config_hash=config.config_hash, config=config,
        environment=EnvironmentFingerprint(harness_version="0.1.0", python="3.11.7",
                                           platform="Linux test", cpu="Test CPU",
                                           packages={framework: "9.9"}),
        started_at=started, finished_at=started + timedelta(seconds=30), log_file="train.log",
    )


def record(root: Path, result: BenchmarkResult, sweep: dict | None = None,
           log_lines: list[str] | None = None) -> Path:
    """Store a result with its run folder (result.json, optional sweep.json and train.log)."""
    run_dir = root / result.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "result.json").write_text(result.model_dump_json())
    if sweep is not None:
        (run_dir / "sweep.json").write_text(json.dumps(sweep))
    if log_lines is not None:
        (run_dir / "train.log").write_text("\n".join(log_lines) + "\n")
    ResultStore(root).add(result, run_dir)
    return run_dir
