"""MLPerf logs, round three: one synthetic log per rule (issue 34, classes 1, 2 and 4).

Samples come from what the run trained, warm-up is counted in the unit the log counts, and the
figure carries the unit the benchmark's rules define.
"""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from harness.cli.main import main
from harness.logformats.mllog import MLLogFormat
from harness.logformats.mlperf_rules import throughput_unit
from tests.harness.logformats.test_mllog import mllog


def parse(path, *args) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["parse", str(path), "--json", *args]) == 0
    return json.loads(out.getvalue())["result"]


def write(tmp_path, text: str):
    path = tmp_path / "result_0.txt"
    path.write_text(text)
    return path


def test_block_samples_count_is_used_not_the_dataset(tmp_path):
    """NVIDIA's Llama 3.1 405B layout: train_samples is the dataset, each block says its samples."""
    text = mllog("submission_benchmark", "llama31_405b") + mllog("global_batch_size", 1152)
    text += mllog("train_samples", 1_574_207_408) + mllog("run_start", time_ms=0)
    at, step = 0, 0
    for steps, seconds in ((240, 4000), (16, 270), (16, 280)):
        count = steps * 1152
        text += mllog("block_start", time_ms=at, samples_count=count, step=step)
        at, step = at + seconds * 1000, step + steps
        text += mllog("block_stop", time_ms=at, samples_count=count, step=step)
    text += mllog("run_stop", time_ms=at + 10, status="success", samples_count=step * 1152)
    result = parse(write(tmp_path, text))
    throughput = result["throughput"]
    assert throughput["value"] == pytest.approx((18432 / 270 + 18432 / 280) / 2)
    assert throughput["unit"] == "sequences/s" and throughput["records_used"] == 2
    assert throughput["samples_from"] == "block steps x global batch"
    assert not any("impossible" in w for w in result["warnings"])


def test_cumulative_samples_count_on_block_records(tmp_path):
    """AMD's Llama 3.1 8B layout: block_start/stop carry the samples so far."""
    text = mllog("submission_benchmark", "llama31_8b") + mllog("global_batch_size", 32)
    for i, seconds in enumerate((600, 500, 500)):
        text += mllog("block_start", time_ms=i * 10**6, samples_count=i * 12288)
        text += mllog("block_stop", time_ms=i * 10**6 + seconds * 1000, samples_count=(i + 1) * 12288)
    parsed = MLLogFormat().parse_file(write(tmp_path, text))
    assert [s.samples for s in parsed.steps] == [12288] * 3
    assert [s.step for s in parsed.steps] == [384, 768, 1152]  # iterations of 32 sequences
    assert parsed.meta["samples_from"] == "block samples_count (stop - start)"


def test_block_stops_counting_samples_after_one_block_start(tmp_path):
    """MosaicML's BERT: one block_start, then block_stops whose first_epoch_num is the samples so far;
    train_samples at init is the configured maximum, which the run never reached."""
    text = (mllog("submission_benchmark", "bert") + mllog("global_batch_size", 448)
            + mllog("train_samples", 156_811_560) + mllog("run_start", time_ms=0)
            + mllog("block_start", time_ms=0, first_epoch_num=0, epoch_count=1))
    for i in range(1, 5):
        text += mllog("block_stop", time_ms=i * 20_000, first_epoch_num=i * 24640)
    text += mllog("run_stop", time_ms=80_000, status="success")
    result = parse(write(tmp_path, text))
    assert result["throughput"]["value"] == pytest.approx(24640 / 20)
    assert result["throughput"]["records_used"] == 3  # the first block holds the warm-up
    assert "block_stop sample counts" in result["throughput"]["samples_from"]


def test_configured_maximum_is_capped_by_the_last_eval(tmp_path):
    """A train_samples at the end larger than the last evaluation's count: the run stopped there."""
    text = (mllog("submission_benchmark", "llama2_70b_lora") + mllog("global_batch_size", 8)
            + mllog("run_start", time_ms=0) + mllog("block_start", time_ms=0, samples_count=0)
            + mllog("eval_accuracy", 0.92, time_ms=100_000, samples_count=3072)
            + mllog("block_stop", time_ms=100_000) + mllog("train_samples", 3901, time_ms=100_001)
            + mllog("run_stop", time_ms=100_002, status="success"))
    result = parse(write(tmp_path, text))
    assert result["throughput"]["value"] == pytest.approx(3072 / 100)
    assert result["throughput"]["samples_from"] == "the last eval's sample count"


def test_run_stop_count_wins(tmp_path):
    text = (mllog("submission_benchmark", "stable_diffusion") + mllog("global_batch_size", 512)
            + mllog("run_start", time_ms=0) + mllog("train_samples", 6_513_144, time_ms=1)
            + mllog("eval_accuracy", 80.0, time_ms=50_000, samples_count=512_000)
            + mllog("run_stop", time_ms=100_000, status="success", samples_count=1_024_000))
    result = parse(write(tmp_path, text))
    assert result["throughput"]["value"] == pytest.approx(1_024_000 / 100)
    assert result["throughput"]["samples_from"] == "run_stop samples_count"


def test_impossible_rate_is_reported(tmp_path):
    """Dataset-sized epochs in a run that reached far fewer samples: a warning, never silence."""
    text = (mllog("submission_benchmark", "resnet") + mllog("train_samples", 1_281_167, time_ms=-1)
            + mllog("run_start", time_ms=0))
    for epoch in range(1, 4):
        text += mllog("epoch_start", time_ms=(epoch - 1) * 1000, epoch_num=epoch)
        text += mllog("epoch_stop", time_ms=epoch * 1000, epoch_num=epoch)
    text += mllog("run_stop", time_ms=3000, status="success", samples_count=40_000)
    result = parse(write(tmp_path, text))
    assert any(w.startswith("impossible throughput") for w in result["warnings"])


def test_epoch_numbered_records_lose_one_epoch_to_warm_up(tmp_path):
    """RNN-T / RetinaNet: tracked_stats numbered by epoch; 10 warm-up iterations are one epoch."""
    text = mllog("submission_benchmark", "ssd")
    for epoch, value in enumerate((100.0, 200.0, 210.0, 220.0, 230.0), start=1):
        text += mllog("tracked_stats", {"throughput": value}, step=epoch)
    text += mllog("run_stop", status="success")
    result = parse(write(tmp_path, text))
    throughput = result["throughput"]
    assert throughput["value"] == pytest.approx(215.0) and throughput["records_used"] == 4
    assert "1 warm-up epoch" in throughput["method"]
    assert not any("only the last record" in w for w in result["warnings"])
    # An explicit warm-up in records still means records.
    result = parse(write(tmp_path, text), "--skip-records", "3")
    assert result["throughput"]["value"] == pytest.approx(225.0)


def test_short_log_fallback_says_it_happened(tmp_path):
    text = mllog("submission_benchmark", "ssd") + mllog("tracked_stats", {"throughput": 100.0}, step=1)
    text += mllog("tracked_stats", {"throughput": 120.0}, step=1) + mllog("run_stop", status="success")
    result = parse(write(tmp_path, text))
    assert any("only the last record is used" in w for w in result["warnings"])


@pytest.mark.parametrize("name, unit", [
    ("gpt3", "tokens/s"), ("llama31_405b", "sequences/s"), ("llama31_8b", "sequences/s"),
    ("llama2_70b_lora", "sequences/s"), ("bert", "sequences/s"), ("resnet", "samples/s"),
    ("stable_diffusion", "samples/s"), ("unknown_benchmark", "samples/s")])
def test_units_follow_the_rules(name, unit):
    assert throughput_unit(name) == unit


def test_gpt3_counts_tokens(tmp_path):
    text = (mllog("submission_benchmark", "gpt3") + mllog("global_batch_size", 1536)
            + mllog("max_sequence_length", 2048) + mllog("run_start", time_ms=0)
            + mllog("block_start", time_ms=0, first_epoch_num=0, epoch_count=50331648)
            + mllog("eval_accuracy", 2.69, time_ms=1_000_000, epoch_num=100663296)
            + mllog("block_stop", time_ms=1_000_000, first_epoch_num=0)
            + mllog("train_samples", 100663296, time_ms=1_000_001)
            + mllog("run_stop", time_ms=1_000_002, status="success"))
    result = parse(write(tmp_path, text))
    assert result["throughput"]["unit"] == "tokens/s"
    assert result["throughput"]["value"] == pytest.approx(100663296 / 1000)
    assert result["throughput"]["last_step_used"] == 100663296 // (1536 * 2048)
