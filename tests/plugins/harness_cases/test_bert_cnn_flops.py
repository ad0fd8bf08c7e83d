"""Counted FLOPs of the BERT and CNN cases: the published sizes, the same for every framework."""

from __future__ import annotations

import pytest

from harness_cases.bert_cases import bert_base_seq128
from harness_cases.bert_flops import bert_flops_per_sequence
from harness_cases.cnn_flops import cnn_flops_per_image, mobilenet_v1_macs, resnet50_macs


def test_published_cnn_sizes():
    macs, params = resnet50_macs(224, 1000)
    assert macs == pytest.approx(4.09e9, rel=0.01)  # ResNet-50 v1.5: 4.1 GMACs
    assert params + 53_120 == 25_557_032  # + BatchNorm scale/shift = the trainable count
    macs, params = mobilenet_v1_macs(224, 1000)
    assert macs == pytest.approx(569e6, rel=0.01)  # Howard et al. 2017, table 8
    assert params + 21_888 == 4_231_976


def test_training_flops_are_three_forward_passes():
    estimate = cnn_flops_per_image("resnet50", {"image_size": 224, "num_classes": 1000})
    assert estimate.unit == "images/s" and estimate.per_unit == 6 * resnet50_macs(224, 1000)[0]
    small = cnn_flops_per_image("resnet50", {"image_size": 32, "num_classes": 10})
    assert small.per_unit < estimate.per_unit / 40  # ~ (224/32)^2 = 49 times fewer


def test_bert_base_per_sequence():
    estimate = bert_flops_per_sequence(bert_base_seq128().params)
    assert estimate.unit == "sequences/s"
    # 85M encoder parameters x 128 tokens x 6 dominate: ~7e10 FLOPs per sequence.
    assert 6.5e10 < estimate.per_unit < 7.5e10
    # By hand: encoder 12(4·768² + 2·768·3072), MLM head 768² + 768·30522 at 20 positions,
    # attention 12·12·768·128².
    encoder, head = 12 * (4 * 768**2 + 2 * 768 * 3072), 768**2 + 768 * 30522
    assert estimate.per_unit == 6 * (encoder * 128 + head * 20) + 12 * 12 * 768 * 128**2
    assert estimate.parameters == encoder + head


def test_model_flops_hook_answers_for_every_framework(tmp_path):
    from harness_cases import plugin
    from tests.plugins.conftest import plan_context

    for framework in ("pytorch", "paddle", "mxnet"):
        context = plan_context(tmp_path, "mobilenet_v1", framework, scale="full")
        assert plugin.model_flops(context=context).per_unit == pytest.approx(6 * 568_740_352)
    for framework in ("pytorch", "paddle"):
        context = plan_context(tmp_path, "bert_base_seq128", framework, scale="full")
        assert plugin.model_flops(context=context).unit == "sequences/s"
