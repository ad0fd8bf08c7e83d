"""End to end: the PyTorch BERT and CNN cases train for real (no torchvision, no hub download)."""

from __future__ import annotations

import pytest

from tests.plugins.conftest import legacy_index, smoke_result

pytest.importorskip("torch")
pytestmark = pytest.mark.slow


def test_mobilenet_v1_smoke(harness_cli, tmp_path):
    result = smoke_result(harness_cli, "--case", "mobilenet_v1", "--framework", "pytorch")
    index = legacy_index(tmp_path, result)
    assert result["status"] == "success" and result["steps_completed"] == 30
    assert result["loss_final"] < result["loss_first"]
    assert result["health"]["status"] == "healthy", result["health"]["reasons"]
    assert index["UNIT"] == "images/s" and index["model_name"] == "clas_mobilenet_v1_bs32_fp32"


def test_bert_smoke(harness_cli, tmp_path):
    pytest.importorskip("transformers")
    result = smoke_result(harness_cli, "--case", "bert_base_seq128", "--framework", "pytorch")
    index = legacy_index(tmp_path, result)
    assert result["status"] == "success" and result["loss_final"] < result["loss_first"]
    assert result["health"]["status"] == "healthy", result["health"]["reasons"]
    assert result["environment"]["packages"]["transformers"]
    assert index["UNIT"] == "sequences/s" and index["direction_id"] == 1


@pytest.mark.xfail(reason='failed in the last slow run, cause not yet established (torch.compile on CPU under the isolated launch is the first suspect)', strict=False)
def test_mobilenet_v1_compiled_smoke(harness_cli, tmp_path):
    """``--set compile=true`` reaches train_cnn.py (its read-back, which harness compares with
    the config, says so) and the compiled model trains: its first loss, before any update, is
    the eager model's on the same batch, and the loss falls. MobileNetV1 keeps the
    compilation short (ResNet-50's took 156 s here with a cold cache)."""
    compiled = smoke_result(harness_cli, "--case", "mobilenet_v1", "--framework", "pytorch",
                            "--max-steps", "30", "--set", "skip_steps=2", "--set", "compile=true")
    eager = smoke_result(harness_cli, "--case", "mobilenet_v1", "--framework", "pytorch",
                         "--max-steps", "2", "--set", "skip_steps=1")
    assert compiled["status"] == "success" and compiled["steps_completed"] == 30
    assert compiled["readback"]["compile"] is True and eager["readback"]["compile"] is False
    log = (tmp_path / "results" / compiled["run_id"] / compiled["log_file"]).read_text()
    assert "channels-last False, compile True" in log
    assert compiled["loss_first"] == pytest.approx(eager["loss_first"], rel=1e-4)
    assert compiled["loss_final"] < compiled["loss_first"]
