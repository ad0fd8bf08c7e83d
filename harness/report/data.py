"""The runs a report covers, read from the results database and the run folders."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from harness.models import BenchmarkResult
from harness.store import ResultStore, run_folder_damage
from harness.sweep.runner import read_sweep_marker

PRECISION_ORDER = {"fp32": 0, "tf32": 1, "bf16": 2, "fp16": 3}


@dataclass
class ReportFilter:
    """Which recorded runs a report or comparison covers; empty lists mean all."""

    cases: list[str] = field(default_factory=list)
    frameworks: list[str] = field(default_factory=list)
    vendors: list[str] = field(default_factory=list)
    sweeps: list[str] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)
    since: datetime | None = None

    def describe(self) -> str:
        parts = [f"{name} {', '.join(values)}" for name, values in (
            ("case", self.cases), ("framework", self.frameworks), ("vendor", self.vendors),
            ("sweep", self.sweeps), ("run", self.run_ids)) if values]
        if self.since:
            parts.append(f"since {self.since.isoformat()}")
        return "; ".join(parts) or "all recorded runs"


@dataclass
class ReportRun:
    """One recorded run with what its run folder adds (the sweep it belongs to)."""

    result: BenchmarkResult
    run_dir: Path | None
    sweep: dict = field(default_factory=dict)
    attempts: int = 1  # recorded runs with this resolved-config hash
    #: why its run folder no longer holds it (its log and per-step charts are then missing)
    damage: str | None = None

    @property
    def ok(self) -> bool:
        return self.result.status == "success" and self.result.throughput is not None

    @property
    def world_size(self) -> int:
        return self.result.nproc * self.result.nnodes

    @property
    def value(self) -> float | None:
        return self.result.throughput.value if self.result.throughput else None

    @property
    def unit(self) -> str:
        return self.result.throughput.unit if self.result.throughput else ""

    @property
    def label(self) -> str | None:
        return self.sweep.get("label")

    @property
    def group(self) -> str | None:
        return self.sweep.get("group")

    @property
    def in_layout_sweep(self) -> bool:
        """Runs of a sweep with named groups or labelled points (parallel layouts, configs)."""
        return bool(self.label or self.group)

    @property
    def peak_memory_bytes(self) -> int | None:
        return self.peak_memory[0]

    @property
    def peak_memory(self) -> tuple[int | None, str]:
        """Peak memory of the busiest device and where it comes from: the vendor monitor's
        device reading (NVML, what nvidia-smi shows, as in the seeds' tables) where there is
        one, else the framework's own peak."""
        readings = []
        for key, value in self.result.device_metrics.items():
            if "peak_memory" in key and "bytes" in key:
                values = value if isinstance(value, list) else [value]
                readings += [v for v in values if isinstance(v, (int, float))]
        if readings:
            return int(max(readings)), "device monitor"
        if self.result.peak_memory_bytes:
            return self.result.peak_memory_bytes, "framework"
        return None, "none"

    @property
    def mfu(self) -> float | None:
        """Model FLOPs utilisation the pipeline computed (GPU vendors with a peak table)."""
        efficiency = getattr(self.result, "efficiency", None)
        return getattr(efficiency, "mfu", None) if efficiency is not None else None

    @property
    def latency_ms(self) -> float | None:
        step = self.result.step_time
        return step.median * 1000.0 if step else None


def _matches(result: BenchmarkResult, marker: dict, filters: ReportFilter) -> bool:
    if filters.cases and result.case not in filters.cases:
        return False
    if filters.frameworks and result.framework not in filters.frameworks:
        return False
    if filters.vendors and result.vendor not in filters.vendors:
        return False
    if filters.sweeps and marker.get("sweep") not in filters.sweeps:
        return False
    if filters.run_ids and not any(result.run_id.startswith(r) for r in filters.run_ids):
        return False
    if filters.since and result.started_at < filters.since:
        return False
    return True


def load_runs(root: Path, filters: ReportFilter | None = None) -> list[ReportRun]:
    """Recorded runs that match ``filters``, one per resolved-config hash.

    When a configuration was recorded several times (a rerun, a resumed sweep), the newest
    successful run represents it; a configuration that never succeeded shows its newest run.
    """
    filters = filters or ReportFilter()
    store = ResultStore(root)
    if not store.path.exists():
        return []
    dirs = store.run_dirs()
    by_hash: dict[str, list[ReportRun]] = {}
    for result in store.list(limit=1_000_000):
        folder = dirs.get(result.run_id)
        run_dir = Path(folder) if folder else None
        marker = read_sweep_marker(run_dir)
        if _matches(result, marker, filters):
            by_hash.setdefault(result.config_hash, []).append(
                ReportRun(result, run_dir, marker, damage=run_folder_damage(result, run_dir)))
    chosen = []
    for runs in by_hash.values():
        runs.sort(key=lambda r: (r.ok, r.result.started_at), reverse=True)
        best = runs[0]
        best.attempts = len(runs)
        chosen.append(best)
    return sorted(chosen, key=sort_key)


def load_history(root: Path, filters: ReportFilter | None = None) -> list[ReportRun]:
    """Every recorded run that matches ``filters`` (reruns included), oldest first."""
    filters = filters or ReportFilter()
    store = ResultStore(root)
    if not store.path.exists():
        return []
    dirs = store.run_dirs()
    runs = []
    for result in store.list(limit=None):
        folder = dirs.get(result.run_id)
        run_dir = Path(folder) if folder else None
        marker = read_sweep_marker(run_dir)
        if _matches(result, marker, filters):
            runs.append(ReportRun(result, run_dir, marker))
    return sorted(runs, key=lambda run: run.result.started_at)


def sort_key(run: ReportRun):
    r = run.result
    return (r.case, r.framework, r.vendor, r.config.scale, run.group or "", run.world_size,
            PRECISION_ORDER.get(r.precision, 9), r.precision, r.micro_batch_size, run.label or "",
            r.started_at)
