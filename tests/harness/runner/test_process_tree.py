"""Nothing survives a stopped launch: workers in sessions of their own (as torchrun starts
them), workers stopped with SIGSTOP, and workers orphaned by a launcher that died."""

from __future__ import annotations

import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from harness.models import LaunchSpec
from harness.runner.process import execute_launch, failure_reason


def _launcher(pid_file: Path, *, then: str, worker_output: str = "None") -> LaunchSpec:
    """A launcher that starts 2 workers in their own sessions (like torchrun), writes their
    pids, and then does ``then``."""
    code = textwrap.dedent(f"""
        import os, signal, subprocess, sys, time
        worker = "import time\\nwhile True:\\n    time.sleep(0.2)"
        procs = [subprocess.Popen([sys.executable, '-c', worker], start_new_session=True,
                                  stdout={worker_output}, stderr={worker_output})
                 for _ in range(2)]
        open({str(pid_file)!r}, 'w').write(' '.join(str(p.pid) for p in procs))
        print('workers started', flush=True)
        {then}
    """)
    return LaunchSpec(argv=[sys.executable, "-c", code], log_format="megatron")


def _wait_for(path: Path, bound_s: float = 60) -> list[int]:
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return [int(p) for p in path.read_text().split()]
        time.sleep(0.05)
    raise AssertionError(f"{path} was not written within {bound_s} s")


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_hang_stops_workers_in_their_own_sessions_even_when_sigstopped(tmp_path):
    pid_file = tmp_path / "pids"
    launch = _launcher(pid_file, then="time.sleep(600)")

    import threading

    stopped = []

    def stop_workers():  # the fault: every worker frozen (SIGSTOP), the launcher silent
        for pid in _wait_for(pid_file):
            os.kill(pid, signal.SIGSTOP)
            stopped.append(pid)

    thread = threading.Thread(target=stop_workers)
    thread.start()
    outcome = execute_launch(launch, tmp_path / "log", timeout_s=120, hang_timeout_s=2)
    thread.join()
    assert outcome.status == "hang"
    assert len(stopped) == 2
    assert all(_gone(pid) for pid in stopped), [psutil.Process(p).status() for p in stopped if not _gone(p)]
    assert "could not be stopped" not in outcome.reason


def test_workers_orphaned_by_a_dead_launcher_are_stopped(tmp_path):
    # The launcher exits at once; its workers (own sessions, re-parented) run on silently.
    pid_file = tmp_path / "pids"
    launch = _launcher(pid_file, then="sys.exit(0)", worker_output="subprocess.DEVNULL")
    outcome = execute_launch(launch, tmp_path / "log",
                             timeout_s=120, hang_timeout_s=60)
    workers = _wait_for(pid_file)
    assert outcome.exit_code == 0
    assert all(_gone(pid) for pid in workers)


def test_sigterm_to_the_harness_is_a_terminated_outcome(tmp_path):
    from harness.runner.signals import stop_signals_raise

    pid_file = tmp_path / "pids"
    import threading

    def terminate_us():
        _wait_for(pid_file)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=terminate_us)
    thread.start()
    with stop_signals_raise():
        outcome = execute_launch(_launcher(pid_file, then="time.sleep(600)"), tmp_path / "log",
                                 timeout_s=120, hang_timeout_s=120)
    thread.join()
    assert outcome.status == "terminated" and "SIGTERM" in outcome.reason
    assert all(_gone(pid) for pid in _wait_for(pid_file))
    assert "[harness] run stopped: terminated by SIGTERM" in (tmp_path / "log").read_text()


def test_failure_reason_is_the_error_lines_not_iteration_lines():
    iteration = (" iteration        7/      30 | consumed samples:           56 | elapsed time per "
                 "iteration (ms): 120.1 | learning rate: 2.7E-03 | lm loss: 6.9E+00 | number of "
                 "skipped iterations:   0 | number of nan iterations:   0 |")
    tail = [iteration] * 30 + ["Traceback (most recent call last):", "  File 'x.py', line 3",
                               "RuntimeError: CUDA error: an illegal memory access " + "x" * 1000]
    reason = failure_reason(tail, "training process exited with code 1")
    assert "iteration " not in reason and "RuntimeError: CUDA error" in reason
    assert len(reason) < 600
    assert failure_reason([iteration] * 5, "hang") == "hang: " + iteration.strip()
    assert len(failure_reason(["x" * 5000], "failed")) < 260
    assert "lm loss: nan" in failure_reason(["step 3 | lm loss: nan |"], "failed")


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640)])
def test_result_files_follow_the_umask(tmp_path, umask, mode):
    from harness.results_io import atomic_write_text

    previous = os.umask(umask)
    try:
        atomic_write_text(tmp_path / "result.json", "{}\n")
    finally:
        os.umask(previous)
    assert (tmp_path / "result.json").stat().st_mode & 0o777 == mode
