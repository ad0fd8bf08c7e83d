"""Recorded runs as TensorBoard event files: one folder per run, so runs overlay.

Per step, from the run's training log: ``train/loss``, ``train/throughput``,
``train/learning_rate``, ``train/step_time_s``. From a device monitor's samples (a CSV that a
vendor plugin names in ``device_metrics["monitor_csv"]``, columns ``time_s, gpu`` and one per
measurement, e.g. the NVIDIA plugin's NVML memory, utilisation and power):
``device/<measurement>/gpu<N>`` per sample. Written through ``tensorboardX``, else
``torch.utils.tensorboard`` (the ``tensorboard`` extra: pip install 'harness-bench[tensorboard]').
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from harness.errors import UserInputError
from harness.models import StepRecord
from harness.report.data import ReportRun

StepReader = Callable[[ReportRun], "list[StepRecord] | None"]
STEP_TAGS = {"loss": "train/loss", "throughput": "train/throughput",
             "learning_rate": "train/learning_rate", "step_time_s": "train/step_time_s"}


def summary_writer_class():
    """The SummaryWriter of tensorboardX, else of torch.utils.tensorboard."""
    try:
        from tensorboardX import SummaryWriter

        return SummaryWriter
    except ImportError:
        pass
    try:
        from torch.utils.tensorboard import SummaryWriter

        return SummaryWriter
    except ImportError:
        raise UserInputError(
            "--tensorboard needs tensorboardX (or torch with tensorboard): "
            "pip install 'harness-bench[tensorboard]'") from None


@dataclass
class TensorBoardExport:
    runs: int = 0
    step_scalars: int = 0
    device_scalars: int = 0


def export_tensorboard(runs: list[ReportRun], out_dir: Path, read_steps: StepReader) -> TensorBoardExport:
    """Write ``out_dir/<run id>/events.*`` for every run with a readable log or monitor."""
    writer_class = summary_writer_class()
    written = TensorBoardExport()
    for run in runs:
        steps = read_steps(run) or []
        samples = monitor_samples(run)
        if not steps and not samples:
            continue
        writer = writer_class(str(out_dir / run.result.run_id))  # both take the folder first
        try:
            start = run.result.started_at.timestamp()
            elapsed = 0.0
            for step in steps:
                elapsed += step.step_time_s or 0.0
                for field, tag in STEP_TAGS.items():
                    value = getattr(step, field)
                    if value is not None:
                        writer.add_scalar(tag, float(value), step.step, walltime=start + elapsed)
                        written.step_scalars += 1
            for tag, index, time_s, value in samples:
                writer.add_scalar(tag, value, index, walltime=start + time_s)
                written.device_scalars += 1
        finally:
            writer.close()
        written.runs += 1
    return written


def monitor_samples(run: ReportRun) -> list[tuple[str, int, float, float]]:
    """(tag, sample index per GPU, seconds since start, value) of the run's monitor CSV."""
    name = run.result.device_metrics.get("monitor_csv")
    if not name or run.run_dir is None:
        return []
    path = run.run_dir / str(name)
    if not path.is_file():
        return []
    samples, counts = [], {}
    with path.open(newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            try:
                time_s, gpu = float(row.pop("time_s")), row.pop("gpu")
            except (KeyError, TypeError, ValueError):
                continue
            index = counts.get(gpu, 0)
            counts[gpu] = index + 1
            for measurement, text in row.items():
                try:
                    value = float(text)
                except (TypeError, ValueError):
                    continue  # a reading the device did not support is empty
                samples.append((f"device/{measurement}/gpu{gpu}", index, time_s, value))
    return samples
