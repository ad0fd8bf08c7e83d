"""FlagPerf ``[PerfLog] {json}`` training events."""

from __future__ import annotations

import json

import pytest

from harness.logformats.flagperf import FlagPerfFormat


def perflog(event: str, value: dict, time_ms: int = 1661936015871) -> str:
    body = {"event": event, "value": value,
            "metadata": {"file": "run_pretraining.py", "lineno": 100, "time_ms": time_ms}}
    return "[PerfLog] " + json.dumps(body) + "\n"


def test_step_end_rates_and_finished_summary(tmp_path):
    text = (
        perflog("SUBMITTED", {"submitter": "x"})
        + perflog("INIT_END", {"train_batch_size": 32})
        + "".join(perflog("STEP_END", {"loss": 10.0 - i, "epoch": 1, "end_training": False,
                                       "global_steps": 10 * i, "num_trained_samples": 320 * i,
                                       "learning_rate": 4e-05, "seq/s": 1000.0 + i})
                  for i in range(1, 4))
        + perflog("FINISHED", {"e2e_time": 1234.5, "training_sequences_per_second": 999.5,
                               "converged": True, "final_loss": 7.0, "raw_train_time": 1100.2})
    )
    path = tmp_path / "rank0.out.log"
    path.write_text(text)
    parsed = FlagPerfFormat().parse_file(path)
    assert [s.step for s in parsed.steps] == [10, 20, 30]
    assert [s.throughput for s in parsed.steps] == [1001.0, 1002.0, 1003.0]
    assert [s.loss for s in parsed.steps] == [9.0, 8.0, 7.0]
    assert parsed.steps[0].learning_rate == pytest.approx(4e-05)
    assert parsed.framework_reported == 999.5
    assert parsed.unit == "sequences/s"
    assert parsed.meta["batch_size"] == 32


def test_samples_per_second_key_and_broken_json(tmp_path):
    path = tmp_path / "log"
    path.write_text("[PerfLog] {not json\n" + perflog("STEP_END", {"global_steps": 5, "samples/s": 12.5}))
    parsed = FlagPerfFormat().parse_file(path)
    assert [s.throughput for s in parsed.steps] == [12.5] and parsed.unit == "samples/s"


def test_detection():
    assert FlagPerfFormat().detect(perflog("STEP_END", {"global_steps": 1}))
    assert not FlagPerfFormat().detect("[PerfLog] started\n")
