"""Faults injected for real into `harness run` as a user runs it (the demo plugin's real
processes): SIGTERM/SIGHUP, a second Ctrl-C while stopping, a full disk, bad input. Each
ends with a result or one clear error, nothing left running and nothing recorded lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from harness.store import ResultStore
from tests.conftest import run_cli

DEMO = ["run", "--case", "demo_steps", "--framework", "demo"]


def _start(args: list[str], env, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "harness", *args], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _training_tree(proc: subprocess.Popen, output: Path, bound_s: float = 120) -> list[psutil.Process]:
    """Wait until the demo run logged all its steps; the harness's descendants then."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        logs = list(output.glob("*/train.log"))
        if logs and logs[0].read_text().count("consumed samples") >= 6:
            return psutil.Process(proc.pid).children(recursive=True)
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    raise AssertionError("the demo run did not start training")


def _none_alive(procs: list[psutil.Process]) -> bool:
    deadline = time.monotonic() + 30  # reaped asynchronously by whoever is their parent now
    while time.monotonic() < deadline:
        alive = []
        for p in procs:
            try:
                if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                    alive.append(p)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return True
        time.sleep(0.1)
    return False


def _recorded(output: Path) -> dict:
    run_dir = next(p for p in output.iterdir() if p.is_dir())
    result = json.loads((run_dir / "result.json").read_text())
    legacy = json.loads(next((run_dir / "index").iterdir()).read_text())
    assert ResultStore(output).get(result["run_id"]).status == result["status"]
    return {"result": result, "legacy": legacy, "run_dir": run_dir}


@pytest.mark.parametrize("signum, exit_code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_sigterm_and_sighup_stop_everything_and_record_terminated(cli_env, tmp_path, signum, exit_code):
    output = tmp_path / "results"
    proc = _start([*DEMO, "--set", "mode=hang", "--output", str(output)], cli_env, tmp_path)
    tree = _training_tree(proc, output)
    assert tree, "the trainer is running"
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == exit_code, stderr
    recorded = _recorded(output)
    assert recorded["result"]["status"] == "terminated"
    assert signal.Signals(signum).name in recorded["result"]["failure_reason"]
    assert recorded["result"]["steps_completed"] == 6
    assert recorded["legacy"]["JOB_FAIL_FLAG"] == 1
    assert _none_alive(tree)


def test_second_ctrl_c_while_stopping_still_records_the_result(cli_env, tmp_path):
    # The trainer takes a second to stop; Ctrl-C keeps arriving all through that stop.
    output = tmp_path / "results"
    proc = _start([*DEMO, "--set", "mode=slow_stop", "--output", str(output)], cli_env, tmp_path)
    tree = _training_tree(proc, output)
    sent = 0
    # Ctrl-C, then Ctrl-C again and again until the result is on disk: the later ones land
    # inside the stop-and-wait and the writing of the result.
    while proc.poll() is None and not list(output.glob("*/result.json")) and sent < 1200:
        proc.send_signal(signal.SIGINT)
        sent += 1
        time.sleep(0.05)
    _, stderr = proc.communicate(timeout=120)
    assert sent >= 2, "the stop ended before a second Ctrl-C could arrive"
    assert proc.returncode == 130, stderr
    assert _recorded(output)["result"]["status"] == "interrupted"
    assert _none_alive(tree)


def test_bad_input_is_one_line_and_leaves_no_run_folder(cli_env, tmp_path):
    (tmp_path / "afile").write_text("x")
    cases = [
        ([*DEMO, "--output", "afile"], "is a file"),
        (["run", "--case", "gpt3_125M", "--scale", "smoke", "--set", "attention_backend=bogus"],
         "Valid values: auto, flash"),
        (["run", "--case", "gpt3_125M", "--scale", "smoke", "--set", "recompute=bogus"],
         "Valid values: none, selective, full"),
        # refused before launch, not by the training processes after start-up
        (["run", "--case", "resnet50", "--scale", "smoke", "--nproc", "2", "--set", "grad_sync=bogus"],
         "Valid values: ddp, flat, compiled"),
        (["run", "--case", "bert_base_seq128", "--scale", "smoke", "--set", "compile_mode=fast"],
         "Valid values: default, reduce-overhead, max-autotune, max-autotune-no-cudagraphs"),
        ([*DEMO, "--data-dir", str(tmp_path / "does" / "not" / "exist")], "does not exist"),
        (["run", "--case", "gpt3_125M", "--scale", "smoke", "--framework", "megatron"], ""),
    ]
    for args, message in cases:
        proc = run_cli(args, cli_env, tmp_path)
        assert proc.returncode == 2, (args, proc.stdout, proc.stderr)
        errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
        assert len(errors) == 1 and message in errors[0], proc.stderr
        assert "Traceback" not in proc.stderr
        runs = [p for p in (tmp_path / "results").glob("*") if p.is_dir()] if (tmp_path / "results").exists() else []
        assert runs == [], (args, runs)
    assert not (tmp_path / "does").exists()


def test_results_show_matches_literally(cli_env, tmp_path):
    assert run_cli(DEMO, cli_env, tmp_path).returncode == 0
    for pattern in ("", "%", "_"):
        proc = run_cli(["results", "show", pattern], cli_env, tmp_path)
        assert proc.returncode == 2 and proc.stderr.startswith("error: no single run matches")


# --- a full file system: a small tmpfs mounted for the test (root only) -------------------

def _fill(folder: Path) -> None:
    with open(folder / "filler", "wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass


def test_output_on_a_full_disk_stops_training_with_one_error(cli_env, tmp_path, full_fs):
    output = full_fs / "results"
    proc = _start([*DEMO, "--set", "mode=flood", "--output", str(output)], cli_env, tmp_path)
    children = []
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        try:
            children = psutil.Process(proc.pid).children(recursive=True) or children
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    lines = stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and "No space left on device" in lines[-1], stderr
    assert "Traceback" not in stderr
    assert _none_alive(children)
    log = next(output.glob("*/train.log"))
    assert log.stat().st_size > 0  # what was written is kept


def test_cache_on_a_full_disk_records_a_failed_result(cli_env, tmp_path, full_fs):
    env = dict(cli_env, HARNESS_CACHE_DIR=str(full_fs))
    output = tmp_path / "results"
    proc = run_cli(["run", "--case", "gpt3_125M", "--scale", "smoke", "--output", str(output)],
                   env, tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    result = _recorded(output)["result"]
    assert result["status"] == "failed"
    assert result["failure_reason"].startswith("data preparation failed: ")


def test_database_on_a_full_disk_reads_and_fails_clearly(cli_env, tmp_path, full_fs):
    output = full_fs / "results"
    assert run_cli([*DEMO, "--output", str(output)], cli_env, tmp_path).returncode == 0
    before = {p.name: p.stat().st_mtime_ns for p in output.iterdir()}
    _fill(full_fs)
    listing = run_cli(["results", "list", "--output", str(output)], cli_env, tmp_path)
    assert listing.returncode == 0 and "demo_steps" in listing.stdout, listing.stderr
    run_id = next(p for p in output.iterdir() if p.is_dir()).name
    shown = run_cli(["results", "show", run_id, "--output", str(output)], cli_env, tmp_path)
    assert shown.returncode == 0 and json.loads(shown.stdout)["run_id"] == run_id
    assert {p.name: p.stat().st_mtime_ns for p in output.iterdir()} == before  # read-only
    again = run_cli([*DEMO, "--output", str(output)], cli_env, tmp_path)
    assert again.returncode == 1 and "Traceback" not in again.stderr
    assert again.stderr.strip().splitlines()[-1].startswith("error: ")
