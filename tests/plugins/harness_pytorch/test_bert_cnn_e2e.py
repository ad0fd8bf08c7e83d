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
    assert index["UNIT"] == "images/s" and index["model_name"] == "clas_mobilenet_v1_bs32_fp32"


def test_bert_smoke(harness_cli, tmp_path):
    pytest.importorskip("transformers")
    result = smoke_result(harness_cli, "--case", "bert_base_seq128", "--framework", "pytorch")
    index = legacy_index(tmp_path, result)
    assert result["status"] == "success" and result["loss_final"] < result["loss_first"]
    assert result["environment"]["packages"]["transformers"]
    assert index["UNIT"] == "sequences/s" and index["direction_id"] == 1
