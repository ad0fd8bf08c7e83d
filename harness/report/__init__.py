"""Reports: seed-style tables, charts and environment from the results database and run
folders, written as report.md and a self-contained report.html."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from harness.errors import StorageError

if TYPE_CHECKING:
    from harness.registry import Registry
    from harness.report.build import ReportOptions
    from harness.report.data import ReportFilter


@dataclass
class ReportOutput:
    markdown: Path
    html: Path
    runs: int
    damaged: list[str] = field(default_factory=list)  # "run id: why its folder is damaged"


def generate_report(results: Path, out_dir: Path, filters: ReportFilter | None = None,
                    options: ReportOptions | None = None,
                    registry: Registry | None = None) -> ReportOutput:
    """Read the recorded runs under ``results`` and write the report into ``out_dir``."""
    from harness.report.build import ReportBuilder
    from harness.report.data import load_history, load_runs
    from harness.report.render import write_report
    from harness.report.steps import log_step_reader, log_step_samples

    runs = load_runs(results, filters)
    reader = log_step_reader(registry) if registry is not None else None
    samples = log_step_samples(registry) if registry is not None else None
    history = load_history(results, filters) if options is not None and options.history else None
    document = ReportBuilder(runs, filters, options, step_reader=reader, history=history,
                             sample_reader=samples).build()
    try:
        paths = write_report(document, out_dir)
    except OSError as exc:  # a read-only or full folder
        raise StorageError(f"could not write the report into {out_dir}: "
                           f"{exc.strerror or exc}") from None
    return ReportOutput(paths["markdown"], paths["html"], len(runs),
                        damaged=[f"{r.result.run_id}: {r.damage}" for r in runs if r.damage])
