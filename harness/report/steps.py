"""Per-step metrics of a recorded run, re-read from its run folder's training log."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.errors import HarnessError
from harness.models import StepRecord
from harness.report.data import ReportRun

if TYPE_CHECKING:
    from harness.registry import Registry


def log_step_reader(registry: Registry):
    """A reader that parses a run's first-repeat log with its framework's registered log
    format (the one its training script prints); ``None`` when the log or format is missing."""

    def read(run: ReportRun) -> list[StepRecord] | None:
        if run.run_dir is None:
            return None
        path = run.run_dir / run.result.log_file
        if not path.is_file():
            return None
        try:
            framework = registry.frameworks.get(run.result.framework)
        except HarnessError:
            return None
        recorded = run.result.repeats[0].log_format if run.result.repeats else None
        log_format = registry.log_formats.items.get(recorded or framework.log_format)
        if log_format is None:
            return None
        return log_format.parse_file(path, seq_len=run.result.config.params.get("seq_len")).steps

    return read
