"""Recorded runs as Weights & Biases offline runs: ``DIR/wandb/offline-run-*-<id>/``.

Offline mode: nothing is sent and no account is needed; ``wandb sync DIR/wandb/offline-run-*``
uploads them later, where wanted. Each run is one W&B run with the run id (sanitised) as its
id and name, the metadata of :mod:`harness.export.series` as its config, the per-step series
against ``train/step`` and the device samples against ``device/sample``, each row at the
step's or sample's own wall time (``_timestamp``). A run exported before (its folder is
there) is left as it is. The ``wandb`` extra: pip install 'harness-bench[wandb]'.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from harness.errors import UserInputError
from harness.export.series import ExportCount, StepReader, exportable_runs, missing_extra
from harness.report.data import ReportRun

PROJECT = "harness"


def wandb_module():
    try:
        import wandb
    except ImportError:
        raise UserInputError(missing_extra("--wandb", "wandb", "wandb")) from None
    return wandb


def wandb_run_id(run_id: str) -> str:
    """W&B run ids allow letters, digits, ``-`` and ``_``: anything else becomes ``-``."""
    return re.sub(r"[^A-Za-z0-9_-]", "-", run_id)


@contextmanager
def _offline_environment() -> Iterator[None]:
    """Offline and quiet whatever the user's W&B settings say; restored afterwards."""
    forced = {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "WANDB_DISABLE_GIT": "true",
              "WANDB_DISABLE_CODE": "true"}
    saved = {key: os.environ.get(key) for key in forced}
    os.environ.update(forced)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def export_wandb(runs: list[ReportRun], out_dir: Path, read_steps: StepReader,
                 project: str = PROJECT) -> ExportCount:
    """Write one offline W&B run per recorded run with a readable log or monitor."""
    wandb = wandb_module()
    out_dir.mkdir(parents=True, exist_ok=True)
    written = ExportCount()
    with _offline_environment():
        try:
            _write_runs(wandb, runs, out_dir, read_steps, project, written)
        finally:
            # Stops W&B's background service, which writes the run files: they are complete
            # only once it has stopped.
            wandb.teardown()
    return written


def _write_runs(wandb, runs: list[ReportRun], out_dir: Path, read_steps: StepReader, project: str,
                written: ExportCount) -> None:
    for series in exportable_runs(runs, read_steps):
        run_id = wandb_run_id(series.run_id)
        if any((out_dir / "wandb").glob(f"offline-run-*-{run_id}")):
            written.already += 1
            continue
        run = wandb.init(
            mode="offline", dir=str(out_dir), project=project, id=run_id, name=series.run_id,
            group=series.run.result.case, job_type=series.run.result.framework,
            config=series.metadata, reinit="create_new",
            settings=wandb.Settings(silent=True, console="off", x_disable_stats=True,
                                    x_disable_meta=True, disable_git=True, save_code=False))
        try:
            run.define_metric("train/step")
            run.define_metric("train/*", step_metric="train/step")
            run.define_metric("device/sample")
            run.define_metric("device/*", step_metric="device/sample")
            for point in series.step_points():
                run.log({"train/step": point.step, **point.values, "_timestamp": point.walltime})
                written.step_values += len(point.values)
            for sample in series.samples:
                run.log({"device/sample": sample.index, sample.tag: sample.value,
                         "_timestamp": series.start + sample.time_s})
                written.device_values += 1
        finally:
            run.finish()
        written.runs += 1
