"""DeepSpeed ThroughputTimer lines: both layouts, the framework's own running average, the
launcher's end-of-run line, through the parser and through `harness parse`."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

from harness.cli.main import main
from harness_pytorch.deepspeed_log import DeepSpeedTimerFormat

LAUNCHER = "[2022-11-22 10:02:01,787] [INFO] [launch.py:162:main] dist_world_size=2\n"
END = "[2022-11-22 11:27:14,442] [INFO] [launch.py:350:main] Process 29248 exits successfully.\n"


def old_line(count: int, running: float, current: float, peak: str = "7.0") -> str:
    return (f"[2022-11-22 10:03:37,042] [INFO] [timer.py:198:stop] 0/{count}, "
            f"RunningAvgSamplesPerSec={running}, CurrSamplesPerSec={current}, "
            f"MemAllocated=0.72GB, MaxMemAllocated={peak}GB\n")


def new_line(epoch: int, micro: int, step: int, running: float, current: float) -> str:
    return (f"[2024-03-01 08:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] "
            f"epoch={epoch}/micro_step={micro}/global_step={step}, RunningAvgSamplesPerSec={running}, "
            f"CurrSamplesPerSec={current}, MemAllocated=3.1GB, MaxMemAllocated=9.5GB\n")


def parse_text(tmp_path, text: str):
    path = tmp_path / "train.log"
    path.write_text(text, encoding="utf-8")
    return DeepSpeedTimerFormat().parse_file(path)


def test_old_layout_steps_throughput_memory_and_running_average(tmp_path):
    text = "".join(old_line(200 * i, 100.0 - i, 80.0 + i) for i in range(1, 5))
    parsed = parse_text(tmp_path, LAUNCHER + text + END)
    assert [s.step for s in parsed.steps] == [200, 400, 600, 800]
    assert [s.throughput for s in parsed.steps] == [81.0, 82.0, 83.0, 84.0]
    assert parsed.framework_reported == 96.0  # the last RunningAvgSamplesPerSec
    assert parsed.meta["framework_field"] == "RunningAvgSamplesPerSec"
    assert parsed.meta["throughput_scope"] == "total"  # the timer counts the global batch
    assert parsed.peak_memory_bytes == int(7.0 * 2**30)
    assert parsed.meta["run_complete"] is True and not parsed.errors


def test_new_layout_uses_global_step_not_micro_step(tmp_path):
    text = "".join(new_line(0, 20 * i, 10 * i, 50.0, 40.0 + i) for i in range(1, 4))
    parsed = parse_text(tmp_path, text)
    assert [s.step for s in parsed.steps] == [10, 20, 30]
    assert "end_marker" not in parsed.meta  # no launcher seen: no end line expected


def test_timer_count_restarting_with_an_epoch_stays_monotonic(tmp_path):
    text = old_line(100, 9.0, 9.0) + old_line(200, 9.0, 9.0) + old_line(100, 9.0, 9.0).replace("] 0/", "] 1/")
    parsed = parse_text(tmp_path, text)
    assert [s.step for s in parsed.steps] == [100, 200, 300]


def test_launcher_failure_is_an_error(tmp_path):
    failed = "[2022-11-22 10:09:00,000] [ERROR] [launch.py:324:sigkill_handler] ['python'] exits with return code = 1\n"
    parsed = parse_text(tmp_path, LAUNCHER + old_line(200, 9.0, 9.0) + failed)
    assert parsed.errors and "return code = 1" in parsed.errors[0]
    assert not parsed.meta.get("run_complete")


def cli(args: list[str]) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["parse", *args, "--json"])
    return code, json.loads(out.getvalue())


def test_parse_detects_the_format_and_framework_method_names_its_field(tmp_path):
    log = tmp_path / "ds.log"
    log.write_text(LAUNCHER + "".join(old_line(10 * i, 30.0 + i, 20.0 + i) for i in range(1, 13)) + END)
    code, doc = cli([str(log)])
    result = doc["result"]
    assert code == 0 and result["config"]["params"]["log_format"] == "deepspeed"
    # harness: records at iterations 10..120; the first (iterations 1-10) is the warm-up.
    assert result["throughput"]["value"] == pytest.approx(sum(20.0 + i for i in range(2, 13)) / 11)
    code, doc = cli([str(log), "--method", "framework"])
    assert doc["result"]["throughput"]["value"] == 42.0
    assert doc["result"]["throughput"]["field"] == "RunningAvgSamplesPerSec"


def test_launched_run_without_its_end_line_is_truncated(tmp_path):
    log = tmp_path / "cut.log"
    log.write_text(LAUNCHER + "".join(old_line(10 * i, 30.0, 20.0) for i in range(1, 13)))
    _code, doc = cli([str(log)])
    assert doc["result"]["log_summary"]["truncated"] is True
