"""Execute a planned sweep: one run after another, each failure isolated, Ctrl-C resumable."""

from __future__ import annotations

import json
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from harness.errors import HarnessError, UnavailableError
from harness.health import unhealthy_note
from harness.results_io import atomic_write_text
from harness.runner.observer import RunObserver
from harness.runner.pipeline import execute, plan
from harness.runner.signals import (
    Terminated,
    stop_signals_raise,
    terminated_exit_code,
    terminations_received,
)
from harness.sweep.planner import PlannedRun, SweepOptions
from harness.sweep.progress import SweepObserver, SweepProgress

if TYPE_CHECKING:
    from harness.app import Harness

SWEEP_FILE = "sweep.json"  # written into each run folder: which sweep, group and label


@dataclass
class SweepRow:
    """What became of one point of the matrix."""

    planned: PlannedRun
    status: str  # success | failed | timeout | hang | interrupted | terminated | skipped | done | invalid | not run
    reason: str | None = None
    run_id: str | None = None
    value: float | None = None
    unit: str | None = None


@dataclass
class SweepSummary:
    name: str
    rows: list[SweepRow] = field(default_factory=list)
    interrupted: bool = False
    stop_exit_code: int | None = None  # 128 + signal when SIGTERM/SIGHUP stopped the sweep

    def count(self, *statuses: str) -> int:
        return sum(1 for row in self.rows if row.status in statuses)

    @property
    def failed_rows(self) -> list[SweepRow]:
        return [r for r in self.rows if r.status in ("failed", "timeout", "hang", "invalid")]

    @property
    def exit_code(self) -> int:
        if self.interrupted:
            return self.stop_exit_code or 130
        return 1 if self.failed_rows else 0


def row_from_recorded(planned: PlannedRun) -> SweepRow:
    result = planned.recorded
    note = unhealthy_note(result.health) if result else None
    return SweepRow(planned, "done", planned.reason or note, result.run_id if result else None,
                    result.throughput.value if result and result.throughput else None,
                    result.throughput.unit if result and result.throughput else None)


def write_sweep_marker(run_dir: Path, sweep_name: str, source: str, planned: PlannedRun,
                       total: int) -> None:
    """Record in the run folder which sweep, group and label the run belongs to (reports
    use it for layout tables; the result itself stays independent of sweeps)."""
    payload = {"sweep": sweep_name, "source": source, "group": planned.point.group,
               "label": planned.point.label, "point": planned.index, "points": total}
    atomic_write_text(run_dir / SWEEP_FILE, json.dumps(payload, indent=1) + "\n")


def read_sweep_marker(run_dir: Path | None) -> dict:
    if run_dir is None:
        return {}
    try:
        return json.loads((Path(run_dir) / SWEEP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def run_sweep(
    harness: Harness,
    name: str,
    planned: list[PlannedRun],
    options: SweepOptions,
    *,
    source: str = "",
    observer_factory: Callable[[], RunObserver] = RunObserver,
    emit: Callable[[str], None] = lambda text: None,
    progress: SweepProgress | None = None,
) -> SweepSummary:
    """Run every ``todo`` point; list skipped, done and invalid ones with their reasons.

    A failing run is recorded (by the pipeline) and the sweep goes on. Ctrl-C stops the
    sweep after recording the interrupted run; running the same sweep again skips what
    succeeded (same resolved-config hash) and runs the rest.
    """
    summary = SweepSummary(name)
    todo = [p for p in planned if p.state == "todo"]
    progress = progress or SweepProgress(len(todo))
    with stop_signals_raise():
        for item in planned:
            if summary.interrupted:
                summary.rows.append(SweepRow(item, "not run", "the sweep was interrupted before it"))
                continue
            terminations = terminations_received()
            try:
                row = _row_of(harness, name, source, item, len(planned), progress,
                              observer_factory, emit)
            except (KeyboardInterrupt, Terminated) as exc:
                # Between two runs (planning the next, writing a marker): nothing of this point
                # ran; the sweep stops here and says how to resume, like inside a run.
                summary.rows.append(SweepRow(item, "not run", "the sweep was interrupted before it"))
                _stop(summary, exc)
                continue
            summary.rows.append(row)
            if row.status == "interrupted":
                _stop(summary, None)
            elif row.status == "terminated" and terminations_received() > terminations:
                # The sweep itself was told to stop; a training process killed from outside
                # is that run's end only.
                _stop(summary, Terminated(terminated_exit_code() - 128))
    return summary


def _stop(summary: SweepSummary, exc: BaseException | None) -> None:
    summary.interrupted = True
    if isinstance(exc, Terminated):
        summary.stop_exit_code = exc.exit_code


def _row_of(harness: Harness, name, source, item: PlannedRun, total: int, progress: SweepProgress,
            observer_factory, emit) -> SweepRow:
    if item.state == "done":
        return row_from_recorded(item)
    if item.state in ("skipped", "invalid"):
        return SweepRow(item, item.state, item.reason)
    return _run_one(harness, name, source, item, total, progress, observer_factory, emit)


def _run_one(harness: Harness, name, source, item: PlannedRun, total: int, progress: SweepProgress,
             observer_factory, emit) -> SweepRow:
    description = item.point.describe()
    progress.start_run()
    emit(progress.headline(description))
    request = item.request
    try:
        # Planned again right before it runs: a fresh run id (its timestamp) and devices.
        context = plan(harness, request)
        observer = SweepObserver(observer_factory(), progress, emit, description)
        # A todo point: unsupported_reason, asked when it was planned, gave no reason (one
        # that did made it a skipped point), so the plugins are not asked again.
        report = execute(harness, context, request, observer, unsupported=[])
    except KeyboardInterrupt:
        return SweepRow(item, "interrupted", "interrupted by the user before the run was recorded")
    except Terminated as exc:
        return SweepRow(item, "terminated", f"{exc} before the run was recorded")
    except UnavailableError as exc:
        # The machine cannot run it after all (e.g. a plugin's prepare_env finds no GPU or a
        # missing package): listed as skipped with the plugin's reason, like at planning time.
        return SweepRow(item, "skipped", str(exc))
    except HarnessError as exc:
        return SweepRow(item, "failed", str(exc))
    except Exception as exc:  # noqa: BLE001 - one broken run must not end the sweep
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return SweepRow(item, "failed", f"{type(exc).__name__}: {exc} "
                                        f"({Path(where.filename).name}:{where.lineno})")
    finally:
        progress.end_run()
    result = report.result
    write_sweep_marker(report.run_dir, name, source, item, total)
    return SweepRow(item, result.status, result.failure_reason or unhealthy_note(result.health), result.run_id,
                    result.throughput.value if result.throughput else None,
                    result.throughput.unit if result.throughput else None)
