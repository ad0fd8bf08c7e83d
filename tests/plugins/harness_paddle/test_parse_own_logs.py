"""The log formats the Paddle launch declares read the lines its own training scripts print."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plugins.conftest import parse_as_launched, plan_context

DATA = Path(__file__).parent / "data"


def test_gpt_data_parallel_log(tmp_path):
    context = plan_context(tmp_path, "gpt3_6.7B", "paddle", nproc=2)
    parsed = parse_as_launched(context, DATA / "gpt_nproc2.log")
    assert [s.step for s in parsed.steps] == list(range(1, 31)) and not parsed.errors
    first, last = parsed.steps[0], parsed.steps[-1]
    assert first.loss == pytest.approx(7.64053) and last.loss < first.loss / 2
    # ips_total (the whole job, tokens/s) is the step throughput: 2 x the per-process ips.
    assert first.throughput == pytest.approx(13243.70)
    assert first.step_time_s == pytest.approx(0.30928) and first.learning_rate == pytest.approx(1e-3)
    assert parsed.meta["gpus"] == 2  # from the launcher's configuration lines
    # On the CPU the script's last lines give the process's peak resident memory.
    assert parsed.peak_memory_bytes == int(496.1 * 2**20)


def test_bert_log_is_scaled_to_the_job(tmp_path):
    context = plan_context(tmp_path, "bert_base_seq128", "paddle")
    parsed = parse_as_launched(context, DATA / "bert.log")
    assert len(parsed.steps) == 30 and parsed.steps[0].throughput == pytest.approx(52.52123)
    assert parsed.unit == "sequences/s" and parsed.steps[-1].loss < parsed.steps[0].loss
    two = plan_context(tmp_path, "bert_base_seq128", "paddle", nproc=2)
    assert parse_as_launched(two, DATA / "bert.log").steps[0].throughput == \
        pytest.approx(2 * 52.52123)
    assert parsed.peak_memory_bytes == int(399.0 * 2**20)


def test_cnn_log(tmp_path):
    context = plan_context(tmp_path, "resnet50", "paddle")
    parsed = parse_as_launched(context, DATA / "resnet50.log")
    assert [s.step for s in parsed.steps] == list(range(1, 31))
    assert parsed.unit == "images/s" and parsed.steps[-1].loss < parsed.steps[0].loss
    assert all(s.throughput > 0 and s.step_time_s > 0 for s in parsed.steps)
    assert parsed.peak_memory_bytes == int(679.3 * 2**20)


def test_failure_lines_are_reported(tmp_path):
    log = tmp_path / "broken.log"
    text = (DATA / "bert.log").read_text().splitlines()[:3]
    log.write_text("\n".join(text + ["Traceback (most recent call last):", "ValueError: boom"]) + "\n")
    context = plan_context(tmp_path, "bert_base_seq128", "paddle")
    parsed = parse_as_launched(context, log)
    assert any("ValueError: boom" in e for e in parsed.errors)
