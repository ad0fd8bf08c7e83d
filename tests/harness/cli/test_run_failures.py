"""Failure is a result, not a crash: through the CLI with the demo plugin's real processes."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli


def only_run_dir(root: Path) -> Path:
    dirs = [p for p in (root / "results").iterdir() if p.is_dir()]
    assert len(dirs) == 1
    return dirs[0]


def legacy(run_dir: Path) -> dict:
    files = list((run_dir / "index").iterdir())
    assert len(files) == 1
    return json.loads(files[0].read_text())


def test_successful_demo_run_writes_everything(cli_env, tmp_path):
    proc = run_cli(["run", "--case", "demo_steps", "--framework", "demo", "--json"], cli_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["status"] == "success" and result["steps_completed"] == 6
    run_dir = only_run_dir(tmp_path)
    assert {p.name for p in run_dir.iterdir()} >= {"train.log", "config.json", "result.json", "index"}
    index = legacy(run_dir)
    assert list(index) == ["log_file", "model_name", "mission_name", "direction_id", "run_mode",
                           "index", "gpu_num", "FINAL_RESULT", "JOB_FAIL_FLAG", "UNIT"]
    assert index["JOB_FAIL_FLAG"] == 0 and index["FINAL_RESULT"] > 0
    assert (run_dir / "index" / "demo_demo_steps_sp_bs4_fp32_1_speed").exists()


def test_failing_process_gives_failed_result_and_exit_1(cli_env, tmp_path):
    proc = run_cli(["run", "--case", "demo_steps", "--framework", "demo", "--set", "mode=fail"],
                   cli_env, tmp_path)
    assert proc.returncode == 1
    run_dir = only_run_dir(tmp_path)
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "failed"
    assert "exited with code 3" in result["failure_reason"]
    assert "RuntimeError: demo failure" in result["failure_reason"]
    assert legacy(run_dir)["JOB_FAIL_FLAG"] == 1
    log = (run_dir / "train.log").read_text()
    assert "10.1.2.3" not in log and "<ip>" in log


def test_timeout_and_hang_are_results(cli_env, tmp_path):
    proc = run_cli(["run", "--case", "demo_steps", "--framework", "demo", "--set", "mode=sleep",
                    "--set", "timeout_s=2", "--output", "timeout"], cli_env, tmp_path)
    assert proc.returncode == 1
    proc = run_cli(["run", "--case", "demo_steps", "--framework", "demo", "--set", "mode=hang",
                    "--set", "hang_timeout_s=1", "--output", "hang"], cli_env, tmp_path)
    assert proc.returncode == 1
    statuses = {}
    for name in ("timeout", "hang"):
        run_dir = next(p for p in (tmp_path / name).iterdir() if p.is_dir())
        statuses[name] = json.loads((run_dir / "result.json").read_text())["status"]
    assert statuses == {"timeout": "timeout", "hang": "hang"}


def test_ctrl_c_stops_the_run_and_records_interrupted(cli_env, tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--case", "demo_steps", "--framework", "demo",
         "--set", "mode=hang"],
        env=cli_env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 60
    log = None
    while time.monotonic() < deadline:
        logs = list((tmp_path / "results").glob("*/train.log"))
        if logs and logs[0].read_text().count("\n") >= 6:
            log = logs[0]
            break
        time.sleep(0.1)
    assert log is not None, "the demo run did not start"
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    assert proc.returncode == 130
    result = json.loads((log.parent / "result.json").read_text())
    assert result["status"] == "interrupted" and result["steps_completed"] == 6


def test_results_list_and_show_read_the_database(cli_env, tmp_path):
    run_cli(["run", "--case", "demo_steps", "--framework", "demo"], cli_env, tmp_path)
    run_id = only_run_dir(tmp_path).name
    listing = run_cli(["results", "list"], cli_env, tmp_path)
    assert listing.returncode == 0 and run_id[:20] in listing.stdout
    shown = run_cli(["results", "show", run_id[:-2]], cli_env, tmp_path)
    assert json.loads(shown.stdout)["run_id"] == run_id


def test_repeat_reports_the_median(cli_env, tmp_path):
    proc = run_cli(["run", "--case", "demo_steps:demo_0:any:1:1:3", "--json"], cli_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert len(result["repeats"]) == 3
    finals = sorted(r["final_result"] for r in result["repeats"])
    assert result["throughput"]["value"] == finals[1]


def test_a_run_whose_steps_never_get_past_the_warm_up_is_invalid_naming_it(cli_env, tmp_path):
    # the process ends well (exit 0) after 2 of 6 steps; the warm-up is 3
    proc = run_cli(["run", "--case", "demo_steps", "--framework", "demo", "--set", "mode=stop_early",
                    "--set", "skip_steps=3", "--json"], cli_env, tmp_path)
    assert proc.returncode == 1, proc.stderr
    result = json.loads((only_run_dir(tmp_path) / "result.json").read_text())
    assert result["status"] == "invalid" and result["throughput"] is None
    assert result["failure_reason"].startswith("no step past the 3 warm-up steps (skip_steps) was logged")


def test_a_warm_up_as_long_as_the_run_is_refused_before_launch(cli_env, tmp_path):
    proc = run_cli(["run", "--case", "gpt3_125M", "--scale", "smoke", "--set", "skip_steps=50",
                    "--max-steps", "3"], cli_env, tmp_path)
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "skip_steps 50 leaves no step to measure in max_steps 3" in errors[0]
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


@pytest.mark.parametrize("worker_state", ["stopped", "running"])
def test_workers_die_with_a_harness_killed_by_sigkill(cli_env, tmp_path, worker_state):
    """kill -9 of harness leaves nothing to stop its launch; the launch's guard does. The worker
    sleeps without output (a broken pipe would never end it); stopped, it would wait forever."""
    import psutil

    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--case", "demo_steps", "--framework", "demo",
         "--set", "mode=hang"],
        env=cli_env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    workers: list = []
    while not workers:
        assert time.monotonic() < deadline and proc.poll() is None, "the demo run did not start"
        workers = [p for p in psutil.Process(proc.pid).children(recursive=True)
                   if p.cmdline()[1:2] and p.cmdline()[1].endswith("worker.py")]
        time.sleep(0.1)
    [worker] = workers
    if worker_state == "stopped":
        worker.suspend()  # SIGSTOP
    proc.kill()  # SIGKILL: the harness runs no code of its own any more
    proc.wait()
    gone, alive = psutil.wait_procs([worker], timeout=30)
    assert not alive, f"the {worker_state} worker outlived the harness"
