"""End to end: `harness run --framework mxnet` builds the MXNet environment and trains for real."""

from __future__ import annotations

import pytest

from tests.plugins.conftest import legacy_index, smoke_result

pytestmark = pytest.mark.slow


def _check(result: dict, tmp_path) -> dict:
    index = legacy_index(tmp_path, result)
    assert result["status"] == "success" and result["framework_version"] == "1.9.1"
    packages = result["environment"]["packages"]
    assert packages["mxnet"] == "1.9.1" and packages["numpy"].startswith("1.2")  # numpy<1.24
    assert result["environment"]["isolated_env"] is True
    assert result["steps_completed"] == 30 and result["loss_final"] < result["loss_first"]
    assert result["peak_memory_bytes"] > 0  # the script's process max RSS line
    # every step line carries its step time: step-time statistics and total work, as for
    # the other frameworks (25 measured steps after the 5 warm-up steps)
    assert result["step_time"]["n"] == 25 and result["throughput"]["total_work"] > 0
    assert index["UNIT"] == "images/s" and index["mission_name"] == "图像分类"
    assert index["FINAL_RESULT"] == pytest.approx(result["throughput"]["value"], rel=1e-3)
    return index


def test_mobilenet_v1_smoke(harness_cli, tmp_path):
    result = smoke_result(harness_cli, "--case", "mobilenet_v1", "--framework", "mxnet")
    assert _check(result, tmp_path)["model_name"] == "clas_mobilenet_v1_bs64_fp32"


def test_resnet50_smoke(harness_cli, tmp_path):
    result = smoke_result(harness_cli, "--case", "resnet50", "--framework", "mxnet")
    _check(result, tmp_path)
    assert result["health"]["status"] == "healthy", result["health"]["reasons"]


def test_two_devices_through_kvstore(harness_cli, tmp_path):
    result = smoke_result(harness_cli, "--case", "mobilenet_v1", "--framework", "mxnet", "--nproc", "2")
    index = _check(result, tmp_path)
    assert index["gpu_num"] == 2 and result["global_batch_size"] == 2 * 64  # the smoke micro batch


def test_bf16_is_refused_before_launch(harness_cli):
    proc = harness_cli("run", "--vendor", "cpu", "--scale", "smoke", "--case", "mobilenet_v1",
                       "--framework", "mxnet", "--precision", "bf16")
    # unsupported_reason answers before anything is built or launched: bad input, exit 2
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "error: MXNet 1.9 Gluon Trainer trains fp32 or fp16, not bf16")
