"""Generic keyword mode: the seeds' analysis.py rules."""

from __future__ import annotations

import pytest

from harness.errors import UserInputError
from harness.logformats.keyword import KeywordFormat
from harness.logparse.methods import aggregate
from harness.logparse.summary import stream_log

LOG = "".join(f"step {i} loss 1.0 batch_cost: {t} s ips: {v} tokens/s\n"
              for i, (t, v) in enumerate([(2.0, 10.0), (0.5, 40.0), (0.4, 50.0), (0.6, 30.0)]))


def final(tmp_path, **hints):
    path = tmp_path / "log"
    path.write_text("preamble without the keyword\n" + LOG)
    streamed = stream_log(path, KeywordFormat(), **hints)
    return aggregate("analysis-py", streamed.parsed, streamed.summary).value, streamed


def test_mode_minus_one_is_mean_times_gpus(tmp_path):
    value, streamed = final(tmp_path, keyword="ips:", model_mode=-1, gpus=8, ips_unit="tokens/s")
    assert value == pytest.approx(8 * (10 + 40 + 50 + 30) / 4)
    assert streamed.parsed.unit == "tokens/s"


def test_skip_steps(tmp_path):
    path = tmp_path / "log"
    path.write_text(LOG)
    streamed = stream_log(path, KeywordFormat(), keyword="ips:")
    from harness.logparse.methods import MethodOptions

    value = aggregate("analysis-py", streamed.parsed, streamed.summary, MethodOptions(skip=1)).value
    assert value == pytest.approx((40 + 50 + 30) / 3)


def test_mode_zero_converts_the_mean_time_not_the_mean_of_rates(tmp_path):
    from harness.logparse.methods import MethodOptions

    path = tmp_path / "log"
    path.write_text(LOG)
    streamed = stream_log(path, KeywordFormat(), keyword="batch_cost:", model_mode=0,
                          base_batch_size=16, gpus=2)
    value = aggregate("analysis-py", streamed.parsed, streamed.summary, MethodOptions(skip=1)).value
    assert value == pytest.approx(16 * 2 / ((0.5 + 0.4 + 0.6) / 3))  # analysis.py's rule
    assert streamed.parsed.unit == "samples/s"


def test_time_unit_ms_and_mode_two(tmp_path):
    path = tmp_path / "log"
    path.write_text("".join(f"iter_time {ms}\n" for ms in (100, 200, 300)))
    streamed = stream_log(path, KeywordFormat(), keyword="iter_time", model_mode=2, time_unit="ms")
    assert aggregate("analysis-py", streamed.parsed, streamed.summary).value == pytest.approx(1 / 0.2)
    assert streamed.parsed.unit == "steps/s"


def test_mode_three_and_glued_keyword(tmp_path):
    path = tmp_path / "log"
    path.write_text("speed:2.0 steps/s\nspeed:4.0 steps/s\n")
    streamed = stream_log(path, KeywordFormat(), keyword="speed:", model_mode=3, base_batch_size=8)
    assert aggregate("analysis-py", streamed.parsed, streamed.summary).value == pytest.approx(8 * 3.0)


@pytest.mark.parametrize("hints, message", [
    ({}, "needs --keyword"),
    ({"keyword": "x", "model_mode": 7}, "--model-mode 7"),
    ({"keyword": "x", "model_mode": 0}, "--base-batch-size"),
    ({"keyword": "x", "time_unit": "h"}, "--time-unit"),
])
def test_bad_options(hints, message):
    with pytest.raises(UserInputError, match=message):
        KeywordFormat().new_parser(**hints)


def test_never_auto_detected():
    assert not KeywordFormat().detect(LOG.splitlines()[0])
