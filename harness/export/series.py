"""What every experiment-tracker export writes of a recorded run: the same per-step series,
device samples and run metadata, whichever tracker (TensorBoard, W&B, MLflow) receives them.

- per step, from the run's training log: ``train/loss``, ``train/throughput``,
  ``train/learning_rate``, ``train/step_time_s``, at the step's wall time (the run's start
  plus the logged step times so far);
- per device-monitor sample (a CSV that a vendor plugin names in
  ``device_metrics["monitor_csv"]``, columns ``time_s, gpu`` and one per measurement):
  ``device/<measurement>/gpu<N>``, indexed by the sample's number on that GPU;
- the run's metadata: the columns of ``harness results export`` (docs/results.md).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from harness.export.table import run_row
from harness.models import StepRecord
from harness.report.data import ReportRun

StepReader = Callable[[ReportRun], "list[StepRecord] | None"]
STEP_TAGS = {"loss": "train/loss", "throughput": "train/throughput",
             "learning_rate": "train/learning_rate", "step_time_s": "train/step_time_s"}


@dataclass(frozen=True)
class DeviceSample:
    tag: str  # device/<measurement>/gpu<N>
    index: int  # the sample's number on its GPU
    time_s: float  # seconds since the run started
    value: float


@dataclass(frozen=True)
class StepPoint:
    step: int
    walltime: float  # seconds since the epoch
    values: dict[str, float]  # tag -> value, the step's logged fields only


@dataclass
class RunSeries:
    """One run's series and metadata, ready for a tracker."""

    run: ReportRun
    steps: list[StepRecord]
    samples: list[DeviceSample]
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def run_id(self) -> str:
        return self.run.result.run_id

    @property
    def start(self) -> float:
        return self.run.result.started_at.timestamp()

    def step_points(self) -> Iterator[StepPoint]:
        elapsed = 0.0
        for step in self.steps:
            elapsed += step.step_time_s or 0.0
            values = {tag: float(getattr(step, name)) for name, tag in STEP_TAGS.items()
                      if getattr(step, name) is not None}
            if values:
                yield StepPoint(step.step, self.start + elapsed, values)


@dataclass
class ExportCount:
    """What an export wrote."""

    runs: int = 0
    step_values: int = 0
    device_values: int = 0
    already: int = 0  # runs the destination held from an earlier export (left as they are)


def exportable_runs(runs: list[ReportRun], read_steps: StepReader) -> Iterator[RunSeries]:
    """The series of every run with a readable log or device monitor (others have nothing to
    plot and are left out)."""
    for run in runs:
        steps = read_steps(run) or []
        samples = monitor_samples(run)
        if steps or samples:
            folder = str(run.run_dir) if run.run_dir else None
            yield RunSeries(run, steps, samples, run_row(run.result, folder))


def monitor_samples(run: ReportRun) -> list[DeviceSample]:
    """The samples of the run's monitor CSV; an empty reading (a measurement the device did
    not support) is left out."""
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
                    continue
                samples.append(DeviceSample(f"device/{measurement}/gpu{gpu}", index, time_s, value))
    return samples


def missing_extra(option: str, package: str, extra: str) -> str:
    return (f"{option} needs the {package} package: pip install 'harness-bench[{extra}]'")
