"""MLPerf ``:::MLLOG {json}`` lines."""

from __future__ import annotations

import json

import pytest

from harness.logformats.mllog import MLLogFormat


def mllog(key: str, value=None, time_ms: int = 0, event_type: str = "POINT_IN_TIME", **metadata) -> str:
    body = {"namespace": "", "time_ms": time_ms, "event_type": event_type, "key": key, "value": value,
            "metadata": {"file": "train.py", "lineno": 1, **metadata}}
    return ":::MLLOG " + json.dumps(body) + "\n"


def test_tracked_stats_throughput(tmp_path):
    text = (mllog("submission_benchmark", "bert") + mllog("global_batch_size", 2048)
            + mllog("tracked_stats", {"throughput": 2345.6, "loss": 3.2}, step=204800)
            + mllog("tracked_stats", {"throughput": 2400.0}, step=409600)
            + mllog("run_stop", None, status="success"))
    path = tmp_path / "result_0.txt"
    path.write_text(text)
    parsed = MLLogFormat().parse_file(path)
    # BERT's steps count training samples (the rules' epoch reporting): iterations of 2048.
    assert [(s.step, s.throughput) for s in parsed.steps] == [(100, 2345.6), (200, 2400.0)]
    assert parsed.steps[0].loss == 3.2 and parsed.unit == "sequences/s"
    assert parsed.meta["global_batch_size"] == 2048 and parsed.meta["benchmark"] == "bert"
    assert not parsed.errors


def test_epoch_intervals_become_steps_and_aborted_run_fails(tmp_path):
    text = (mllog("train_samples", 1000) + mllog("epoch_start", time_ms=10_000, epoch_num=1)
            + mllog("epoch_stop", time_ms=12_000, epoch_num=1)
            + mllog("epoch_start", time_ms=12_000, epoch_num=2)
            + mllog("epoch_stop", time_ms=16_000, epoch_num=2)
            + mllog("run_stop", None, time_ms=16_500, status="aborted"))
    path = tmp_path / "result_0.txt"
    path.write_text(text)
    parsed = MLLogFormat().parse_file(path)
    assert [s.throughput for s in parsed.steps] == [pytest.approx(500.0), pytest.approx(250.0)]
    assert [s.step_time_s for s in parsed.steps] == [2.0, 4.0]
    assert parsed.errors == ["MLPerf run_stop status: aborted"]


def test_detection():
    assert MLLogFormat().detect(mllog("run_start"))
    assert not MLLogFormat().detect("MLLOG is a library\n")


def test_hugectr_average_speed_is_the_framework_figure_and_repeated_entries_count_once(tmp_path):
    """HugeCTR DLRM submissions print 'Average speed N records/s.' and repeat tracked_stats."""
    stats = mllog("tracked_stats", {"throughput": 36658058.25}, time_ms=9_000, step=0.8999)
    text = (mllog("run_start", time_ms=1_000, event_type="INTERVAL_START") + stats
            + "Hit target accuracy AUC 0.802500 at 68274/75868 iterations with batchsize 55296 in "
              "102.99 s. Average speed 36658058.25 records/s.\n"
            + mllog("run_stop", time_ms=8_000, event_type="INTERVAL_END", status="success") + stats)
    path = tmp_path / "result_1.txt"
    path.write_text(text)
    parsed = MLLogFormat().parse_file(path)
    assert [s.throughput for s in parsed.steps] == [36658058.25]
    assert parsed.framework_reported == 36658058.25
    assert parsed.meta["framework_field"] == "Average speed"
