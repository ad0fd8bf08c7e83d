"""Per-step metrics of a recorded run, re-read from its run folder's training log."""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.errors import HarnessError
from harness.models import StepRecord
from harness.report.data import ReportRun
from harness.stats import first_record_after_warmup

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


def log_step_samples(registry: Registry):
    """A reader of a run's per-step throughputs after the warm-up, from the log of every
    successful repeat (re-read with the format it printed); ``None`` when no log is readable.
    These are the samples "beyond noise" tests (:func:`harness.stats.ratio_of_medians_interval`)."""

    def read(run: ReportRun) -> list[float] | None:
        result = run.result
        if run.run_dir is None:
            return None
        try:
            default_format = registry.frameworks.get(result.framework).log_format
        except HarnessError:
            return None
        samples: list[float] = []
        read: set = set()
        found = False
        for repeat in result.repeats or []:
            path = run.run_dir / repeat.log_file
            log_format = registry.log_formats.items.get(repeat.log_format or default_format)
            if repeat.status != "success" or log_format is None or path in read or not path.is_file():
                continue
            read.add(path)
            steps = [s for s in log_format.parse_file(path, seq_len=result.config.params.get("seq_len")).steps
                     if s.throughput is not None]
            first = first_record_after_warmup([s.step for s in steps], result.skip_steps)
            samples.extend(s.throughput for s in steps[first:])
            found = True
        return samples if found else None

    return read
