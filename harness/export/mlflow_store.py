"""Recorded runs in an MLflow file store: ``mlflow ui --backend-store-uri DIR`` shows them.

Local files only: no tracking server and no account. Each run is one MLflow run of the
experiment ``harness`` (named after the run id, started and ended when the run did), with the
metadata of :mod:`harness.export.series` as params (values longer than MLflow's limit are
cut) and tags, and every series value as a metric with its step and wall time. Needs
``mlflow-skinny`` (or ``mlflow``): the ``mlflow`` extra, pip install 'harness-bench[mlflow]'.
MLflow 3 keeps its file store in maintenance mode; this export allows it for its own writes
(``MLFLOW_ALLOW_FILE_STORE``), and so must whoever opens the folder with MLflow 3.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from harness.errors import UserInputError
from harness.export.series import ExportCount, RunSeries, StepReader, exportable_runs, missing_extra
from harness.report.data import ReportRun

EXPERIMENT = "harness"
#: MLflow refuses more than 1000 metrics (and 100 params) in one batch call.
BATCH = 1000
PARAM_BATCH = 100
PARAM_LIMIT = 6000  # MLflow's longest param value (characters)
#: Run metadata that also becomes tags, so the MLflow UI can filter and group on it.
TAG_KEYS = ("case", "framework", "vendor", "status", "precision", "scale", "config_hash")


@contextmanager
def _file_store_allowed() -> Iterator[None]:
    saved = os.environ.get("MLFLOW_ALLOW_FILE_STORE")
    os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("MLFLOW_ALLOW_FILE_STORE", None)
        else:
            os.environ["MLFLOW_ALLOW_FILE_STORE"] = saved


def mlflow_client(store: Path):
    """An MlflowClient of the file store in ``store``."""
    try:
        from mlflow import MlflowClient
    except ImportError:
        raise UserInputError(missing_extra("--mlflow", "mlflow-skinny", "mlflow")) from None
    return MlflowClient(tracking_uri=store.resolve().as_uri())


def _ms(seconds: float) -> int:
    return int(round(seconds * 1000))


def export_mlflow(runs: list[ReportRun], store: Path, read_steps: StepReader,
                  experiment: str = EXPERIMENT) -> ExportCount:
    """Write one MLflow run per recorded run with a readable log or monitor into the file
    store ``store`` (created if missing; an existing store gains the runs it lacks: a run
    exported before, by its ``harness.run_id`` tag, is left as it is)."""
    written = ExportCount()
    with _file_store_allowed():
        client = mlflow_client(store)
        from mlflow.entities import Metric, Param

        found = client.get_experiment_by_name(experiment)
        experiment_id = found.experiment_id if found else client.create_experiment(experiment)
        exported = {run.data.tags.get("harness.run_id") for run in client.search_runs(
            [experiment_id], max_results=50000)}
        for series in exportable_runs(runs, read_steps):
            if series.run_id in exported:
                written.already += 1
                continue
            result = series.run.result
            run = client.create_run(experiment_id, start_time=_ms(series.start),
                                    run_name=series.run_id, tags=_tags(series))
            mlflow_id = run.info.run_id
            params = [Param(key, str(value)[:PARAM_LIMIT]) for key, value in series.metadata.items()
                      if value is not None]
            for first in range(0, len(params), PARAM_BATCH):
                client.log_batch(mlflow_id, params=params[first:first + PARAM_BATCH])
            metrics = []
            for point in series.step_points():
                metrics += [Metric(tag, value, _ms(point.walltime), point.step)
                            for tag, value in point.values.items()]
            written.step_values += len(metrics)
            metrics += [Metric(sample.tag, sample.value, _ms(series.start + sample.time_s), sample.index)
                        for sample in series.samples]
            written.device_values += len(series.samples)
            for first in range(0, len(metrics), BATCH):
                client.log_batch(mlflow_id, metrics=metrics[first:first + BATCH])
            client.set_terminated(mlflow_id, status="FINISHED" if result.status == "success" else "FAILED",
                                  end_time=_ms(result.finished_at.timestamp()))
            written.runs += 1
    return written


def _tags(series: RunSeries) -> dict[str, str]:
    tags = {f"harness.{key}": str(series.metadata[key]) for key in TAG_KEYS
            if series.metadata.get(key) is not None}
    tags["harness.run_id"] = series.run_id
    return tags
