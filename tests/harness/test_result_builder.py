"""The rules of result assembly shared by ``harness run`` and ``harness parse``."""

from __future__ import annotations

import pytest

from harness.logparse.summary import reading_of
from harness.models import ParsedLog, StepRecord
from harness.result_builder import log_peak_memory, log_verdict, repeat_figures


def _reading(errors=(), throughputs=(10.0, 20.0, 30.0), **fields):
    steps = [StepRecord(step=i, throughput=t, step_time_s=1.0 / t, **fields)
             for i, t in enumerate(throughputs, start=1)]
    return reading_of(ParsedLog(format="f", steps=steps, errors=list(errors)))


def test_a_failed_process_keeps_its_own_reason():
    assert log_verdict("timeout", "ran out of time", _reading(["boom"]), True) == \
        ("timeout", "ran out of time")


def test_failure_markers_in_the_log_fail_a_successful_process():
    status, reason = log_verdict("success", None, _reading(["a", "b", "c", "d"]), True)
    assert status == "failed" and reason == "log shows a failure: b | c | d"


def test_no_figure_fails_a_successful_process():
    assert log_verdict("success", None, _reading(throughputs=()), False) == \
        ("failed", "no completed training steps were found in the log")
    assert log_verdict("success", None, None, False)[0] == "failed"
    assert log_verdict("success", None, _reading(), True) == ("success", None)


def test_repeat_figures_skip_the_warm_up():
    figures = repeat_figures(_reading(), skip_steps=1)
    assert figures.final == pytest.approx(25.0) and figures.median == pytest.approx(25.0)
    assert figures.step_time.n == 2
    assert repeat_figures(None, 1).final is None


def test_repeat_figures_count_the_warm_up_in_iterations_not_records():
    """A log printing every 10 iterations with a 10-iteration warm-up drops one record."""
    steps = [StepRecord(step=10 * i, throughput=t, step_time_s=1.0 / t)
             for i, t in enumerate((1.0, 20.0, 30.0, 40.0), start=1)]
    figures = repeat_figures(reading_of(ParsedLog(format="f", steps=steps)), skip_steps=10)
    assert figures.final == pytest.approx(30.0) and figures.step_time.n == 3


def test_peak_memory_falls_back_to_the_steps():
    assert log_peak_memory(_reading(memory_bytes=5)) == 5
    parsed = ParsedLog(format="f", steps=[StepRecord(step=1, memory_bytes=5)], peak_memory_bytes=9)
    assert log_peak_memory(reading_of(parsed)) == 9
