"""TensorBoard export: event files written through tensorboardX, read back record by record."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from harness.cli.main import main
from tests.harness.report.conftest import megatron_lines
from tests.harness.report.factory import make_result, record

pytest.importorskip("tensorboardX")


def read_scalars(folder: Path) -> dict[str, list[tuple[int, float]]]:
    """(step, value) per tag from the TFRecord event files in ``folder``."""
    from tensorboardX.proto import event_pb2

    scalars: dict[str, list[tuple[int, float]]] = {}
    for path in sorted(folder.glob("events.out.tfevents.*")):
        data = path.read_bytes()
        pos = 0
        while pos < len(data):
            (length,) = struct.unpack("<Q", data[pos:pos + 8])
            payload = data[pos + 12:pos + 12 + length]
            pos += 12 + length + 4  # length, its crc, payload, its crc
            event = event_pb2.Event.FromString(payload)
            for value in event.summary.value:
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars


def test_export_writes_step_and_device_scalars(tmp_path, capsys):
    root = tmp_path / "results"
    result = make_result("tb-run", value=1000.0, vendor="nvidia")
    result = result.model_copy(update={"device_metrics": {"monitor_csv": "monitor.csv"}})
    run_dir = record(root, result, log_lines=megatron_lines([500.0, 1000.0, 1000.0], batch=8))
    (run_dir / "monitor.csv").write_text(
        "time_s,gpu,memory_used_mib,utilization_pct,power_w\n"
        "0.5,0,1200,40,150.5\n0.5,1,1100,,140\n1.5,0,2400,98,310.25\n")
    record(root, make_result("no-folder", value=5.0, minutes=3))  # no log: skipped
    out = tmp_path / "tb"
    assert main(["results", "export", "--output", str(root), "--tensorboard", str(out)]) == 0
    assert "1 runs ->" in capsys.readouterr().err
    scalars = read_scalars(out / "tb-run")
    assert [step for step, _ in scalars["train/loss"]] == [1, 2, 3]
    assert scalars["train/loss"][0][1] == pytest.approx(6.9)
    assert [round(v) for _, v in scalars["train/throughput"]] == [500, 1000, 1000]
    assert scalars["train/learning_rate"][0][1] == pytest.approx(1e-3)
    assert scalars["device/memory_used_mib/gpu0"] == [(0, 1200.0), (1, 2400.0)]
    assert scalars["device/power_w/gpu0"][1][1] == pytest.approx(310.25)
    assert "device/utilization_pct/gpu1" not in scalars  # an empty reading is left out
    assert not (out / "no-folder").exists()
