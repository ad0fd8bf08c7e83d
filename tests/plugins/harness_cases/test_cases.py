"""The BERT and CNN cases: units and legacy naming as the seeds use them, presets that fit a CPU."""

from __future__ import annotations

import pytest

from harness.config_resolution import resolve_config
from harness_cases.bert_cases import bert_base_seq128
from harness_cases.cnn_cases import cnn_case


def test_bert_case():
    case = bert_base_seq128()
    assert case.unit == "sequences/s" and case.direction_id == 1 and case.legacy_prefix == "nlp"
    assert case.dataset == "bert-hdf5"
    assert (case.params["num_layers"], case.params["hidden_size"], case.params["num_heads"]) == (12, 768, 12)
    assert case.params["seq_len"] == 128 and case.params["max_predictions"] == 20
    smoke = resolve_config(case, framework="paddle", vendor="cpu", scale="smoke")
    assert smoke.params["seq_len"] == 128 and smoke.params["num_layers"] == 2


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v1"])
def test_cnn_cases(name):
    case = cnn_case(name)
    assert case.unit == "images/s" and case.mission_name == "图像分类" and case.direction_id == 0
    assert case.legacy_prefix == "clas" and case.dataset == "images-uint8"
    assert case.params["image_size"] == 224 and case.params["num_classes"] == 1000
    smoke = resolve_config(case, framework="mxnet", vendor="cpu", scale="smoke")
    assert smoke.params["image_size"] < 224 and smoke.settings.max_steps <= 30


def test_cases_list_their_frameworks():
    from harness.app import Harness

    registry = Harness.load(load_entrypoints=False).registry
    assert set(registry.frameworks_for(registry.cases.get("resnet50"))) >= {"pytorch", "paddle", "mxnet"}
    assert set(registry.frameworks_for(registry.cases.get("bert_base_seq128"))) >= {"pytorch", "paddle"}
    assert "mxnet" not in registry.frameworks_for(registry.cases.get("gpt3_6.7B"))


@pytest.mark.parametrize("name", ["resnet50", "mobilenet_v1"])
def test_cnn_compile_is_off_unless_asked(name):
    from harness.errors import UserInputError

    case = cnn_case(name)
    assert case.params["compile"] is False and "compile" in case.vendor_overridable
    assert resolve_config(case, framework="pytorch", vendor="cpu", scale="smoke").params["compile"] is False
    asked = resolve_config(case, framework="pytorch", vendor="cpu", scale="smoke", cli_set={"compile": "true"})
    assert asked.params["compile"] is True
    with pytest.raises(UserInputError, match="bool"):
        resolve_config(case, framework="pytorch", vendor="cpu", cli_set={"compile": "maybe"})
