"""The log formats the PyTorch launch declares read its BERT and CNN scripts' DLLogger lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugins.conftest import parse_as_launched, plan_context

DATA = Path(__file__).parent / "data"


def test_bert_dllogger_lines(tmp_path):
    context = plan_context(tmp_path, "bert_base_seq128", "pytorch")
    parsed = parse_as_launched(context, DATA / "bert_dllogger.log")
    assert [s.step for s in parsed.steps] == list(range(1, 31)) and not parsed.errors
    assert parsed.steps[0].loss == pytest.approx(8.33493) and parsed.steps[-1].loss < 7.5
    # A step's throughput comes from consecutive timestamps and the global batch (8 x 1 x 1).
    assert parsed.steps[0].throughput is None and parsed.steps[1].throughput > 0
    assert parsed.steps[1].samples == 8
    assert parsed.framework_reported == pytest.approx(8.04) and parsed.unit == "sequences/s"


def test_cnn_dllogger_lines(tmp_path):
    context = plan_context(tmp_path, "mobilenet_v1", "pytorch")
    parsed = parse_as_launched(context, DATA / "mobilenet_v1_dle.log")
    # 16 iterations per epoch (512 images / 32): steps continue across the epoch boundary.
    assert [s.step for s in parsed.steps] == list(range(1, 31)) and not parsed.errors
    assert parsed.steps[0].throughput == pytest.approx(10.12) and parsed.unit == "images/s"
    assert parsed.steps[-1].loss < parsed.steps[0].loss
    # Step times from the timestamps, for the result's step-time statistics and noise flag.
    assert parsed.steps[0].step_time_s is None
    assert all(s.step_time_s > 0 for s in parsed.steps[1:16])
