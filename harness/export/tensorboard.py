"""Recorded runs as TensorBoard event files: one folder per run, so runs overlay.

The series of :mod:`harness.export.series` as scalars, and the run's metadata as a text
summary ``run/metadata``. Written through ``tensorboardX``, else ``torch.utils.tensorboard``
(the ``tensorboard`` extra: pip install 'harness-bench[tensorboard]').
"""

from __future__ import annotations

import json
from pathlib import Path

from harness.errors import UserInputError
from harness.export.series import ExportCount, StepReader, exportable_runs, missing_extra
from harness.report.data import ReportRun


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
        raise UserInputError(missing_extra("--tensorboard", "tensorboardX (or torch with "
                                           "tensorboard)", "tensorboard")) from None


def export_tensorboard(runs: list[ReportRun], out_dir: Path, read_steps: StepReader) -> ExportCount:
    """Write ``out_dir/<run id>/events.*`` for every run with a readable log or monitor."""
    writer_class = summary_writer_class()
    written = ExportCount()
    for series in exportable_runs(runs, read_steps):
        writer = writer_class(str(out_dir / series.run_id))  # both take the folder first
        try:
            writer.add_text("run/metadata", "```\n" + json.dumps(series.metadata, indent=1) + "\n```",
                            0, walltime=series.start)
            for point in series.step_points():
                for tag, value in point.values.items():
                    writer.add_scalar(tag, value, point.step, walltime=point.walltime)
                    written.step_values += 1
            for sample in series.samples:
                writer.add_scalar(sample.tag, sample.value, sample.index,
                                  walltime=series.start + sample.time_s)
                written.device_values += 1
        finally:
            writer.close()
        written.runs += 1
    return written
