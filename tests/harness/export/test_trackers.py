"""W&B and MLflow exports, read back with the libraries themselves: the same per-step series,
device samples and run metadata as the TensorBoard export."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli.main import main
from tests.harness.export.test_tensorboard import read_scalars
from tests.harness.report.conftest import megatron_lines
from tests.harness.report.factory import make_result, record

MONITOR = ("time_s,gpu,memory_used_mib,utilization_pct,power_w\n"
           "0.5,0,1200,40,150.5\n0.5,1,1100,,140\n1.5,0,2400,98,310.25\n")


def exported():
    """The run with a training log and a device monitor that the exports write."""
    result = make_result("tr-run", value=1000.0, vendor="nvidia")
    return result.model_copy(update={"device_metrics": {"monitor_csv": "monitor.csv"}})


@pytest.fixture
def results(tmp_path) -> Path:
    root = tmp_path / "results"
    result = exported()
    run_dir = record(root, result, log_lines=megatron_lines([500.0, 1000.0, 1000.0], batch=8))
    (run_dir / "monitor.csv").write_text(MONITOR)
    record(root, make_result("no-folder", value=5.0, minutes=3))  # no log, no monitor: skipped
    return root


def wandb_records(run_folder: Path) -> list:
    """The records of a W&B offline run file (``run-<id>.wandb``): LevelDB-log framed
    protobuf ``Record`` messages of wandb's own schema (``wandb.proto``)."""
    from wandb.proto import wandb_internal_pb2

    [path] = run_folder.glob("run-*.wandb")
    data, block = path.read_bytes(), 32768
    assert data[:4] == b":W&B"
    position, pending, records = 7, b"", []
    while position + 7 <= len(data):
        left = block - position % block
        if left < 7:  # a block's tail too short for a header is padding
            position += left
            continue
        _crc, length, kind = struct.unpack("<IHB", data[position:position + 7])
        if kind == 0:
            position += left
            continue
        chunk = data[position + 7:position + 7 + length]
        position += 7 + length
        pending = chunk if kind in (1, 2) else pending + chunk  # full/first, middle/last
        if kind in (1, 4):
            records.append(wandb_internal_pb2.Record.FromString(pending))
    return records


def wandb_history(records) -> list[dict]:
    rows = []
    for rec in records:
        if rec.WhichOneof("record_type") == "history":
            rows.append({("/".join(item.nested_key) if item.nested_key else item.key):
                         json.loads(item.value_json) for item in rec.history.item})
    return rows


def series_of(rows: list[dict], step_key: str) -> dict[str, list[tuple[int, float]]]:
    found: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        if step_key not in row:
            continue
        for key, value in row.items():
            if not key.startswith("_") and key != step_key:
                found.setdefault(key, []).append((row[step_key], value))
    return found


def tensorboard_series(results: Path, tmp_path: Path) -> dict[str, list[tuple[int, float]]]:
    pytest.importorskip("tensorboardX", reason="tensorboardX is not installed: pip install "
                                               "'harness-bench[tensorboard]'")
    assert main(["results", "export", "--output", str(results), "--tensorboard", str(tmp_path / "tb")]) == 0
    scalars = read_scalars(tmp_path / "tb" / "tr-run")
    return {tag: values for tag, values in scalars.items() if not tag.startswith("run/")}


def test_wandb_offline_runs_hold_the_tensorboard_series_and_the_metadata(results, tmp_path, capsys):
    pytest.importorskip("wandb", reason="wandb is not installed: pip install 'harness-bench[wandb]'")
    out = tmp_path / "wb"
    assert main(["results", "export", "--output", str(results), "--wandb", str(out)]) == 0
    assert "wandb: 1 runs ->" in capsys.readouterr().err
    [folder] = (out / "wandb").glob("offline-run-*-tr-run")
    records = wandb_records(folder)
    [run] = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert (run.run_id, run.display_name, run.project, run.run_group) == ("tr-run", "tr-run", "harness", "gpt3_125M")
    config = {item.key: json.loads(item.value_json) for item in run.config.update}
    assert config["final_result"] == 1000.0 and config["case"] == "gpt3_125M"
    assert config["config_hash"] == exported().config_hash and config["unit"] == "tokens/s"
    rows = wandb_history(records)
    steps, device = series_of(rows, "train/step"), series_of(rows, "device/sample")
    assert steps["train/loss"][0] == (1, pytest.approx(6.9))
    assert device["device/memory_used_mib/gpu0"] == [(0, 1200.0), (1, 2400.0)]
    assert "device/utilization_pct/gpu1" not in device  # an empty reading is left out
    start = exported().started_at.timestamp()
    assert start < rows[0]["_timestamp"] < start + 60  # the step's own time, not the export's
    tensorboard = tensorboard_series(results, tmp_path)
    assert {**steps, **device}.keys() == tensorboard.keys()
    for tag, values in tensorboard.items():
        assert [(s, pytest.approx(v, rel=1e-6)) for s, v in values] == {**steps, **device}[tag]
    assert not list((out / "wandb").glob("offline-run-*-no-folder"))
    # wandb's own sync tool takes the folder for an offline run it would upload
    synced = subprocess.run([sys.executable, "-m", "wandb", "sync", "--dry-run", str(folder)],
                            capture_output=True, text=True, timeout=300)
    assert synced.returncode == 0 and "Would sync 1 run(s)" in synced.stdout + synced.stderr
    # Exported again: the run is there already and stays as it is.
    assert main(["results", "export", "--output", str(results), "--wandb", str(out)]) == 0
    assert "0 runs" in capsys.readouterr().err
    assert len(list((out / "wandb").glob("offline-run-*"))) == 1


def test_mlflow_file_store_holds_the_tensorboard_series_and_the_metadata(results, tmp_path, capsys,
                                                                          monkeypatch):
    pytest.importorskip("mlflow", reason="mlflow-skinny is not installed: pip install "
                                         "'harness-bench[mlflow]'")
    from mlflow import MlflowClient

    store = tmp_path / "mlruns"
    assert main(["results", "export", "--output", str(results), "--mlflow", str(store)]) == 0
    assert "mlflow: 1 runs ->" in capsys.readouterr().err
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 asks readers to opt in too
    client = MlflowClient(tracking_uri=store.as_uri())
    experiment = client.get_experiment_by_name("harness")
    [run] = client.search_runs([experiment.experiment_id])
    result = exported()
    assert run.info.run_name == "tr-run" and run.info.status == "FINISHED"
    assert run.info.start_time == int(result.started_at.timestamp() * 1000)
    assert run.data.params["final_result"] == "1000.0" and run.data.params["case"] == "gpt3_125M"
    assert run.data.tags["harness.config_hash"] == result.config_hash
    series = {tag: [(m.step, m.value) for m in sorted(client.get_metric_history(run.info.run_id, tag),
                                                        key=lambda m: (m.step, m.timestamp))]
              for tag in run.data.metrics}
    tensorboard = tensorboard_series(results, tmp_path)
    assert series.keys() == tensorboard.keys()
    for tag, values in tensorboard.items():
        assert [(s, pytest.approx(v, rel=1e-6)) for s, v in values] == series[tag]
    loss = client.get_metric_history(run.info.run_id, "train/loss")
    assert min(m.timestamp for m in loss) >= run.info.start_time  # each at its step's wall time
    assert main(["results", "export", "--output", str(results), "--mlflow", str(store)]) == 0
    assert "1 exported before" in capsys.readouterr().err
    assert len(client.search_runs([experiment.experiment_id])) == 1


@pytest.mark.parametrize("option", ["--wandb", "--mlflow"])
def test_a_file_where_the_folder_goes_is_one_line(results, tmp_path, capsys, option):
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["results", "export", "--output", str(results), option, str(target)]) == 2
    assert f"{option} {target} is a file" in capsys.readouterr().err


@pytest.mark.parametrize("module, option, extra", [("wandb", "--wandb", "wandb"),
                                                   ("mlflow", "--mlflow", "mlflow")])
def test_a_missing_library_names_its_extra(results, tmp_path, capsys, monkeypatch, module, option, extra):
    import sys

    monkeypatch.setitem(sys.modules, module, None)  # importing it raises ImportError
    assert main(["results", "export", "--output", str(results), option, str(tmp_path / "x")]) == 2
    assert f"pip install 'harness-bench[{extra}]'" in capsys.readouterr().err
