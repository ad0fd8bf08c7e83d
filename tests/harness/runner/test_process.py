"""The runner's failure paths, with real subprocesses."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import pytest

from harness.models import LaunchSpec
from harness.runner.process import execute_launch


def launch(code: str) -> LaunchSpec:
    return LaunchSpec(argv=[sys.executable, "-c", textwrap.dedent(code)], log_format="megatron")


def test_success_tees_every_line_and_scrubs(tmp_path):
    lines = []
    outcome = execute_launch(
        launch("print('hello'); print('master at 192.168.1.20:29500')"),
        tmp_path / "log", timeout_s=30, hang_timeout_s=30,
        on_line=lambda line, arrived: lines.append((line, arrived, time.monotonic())),
    )
    assert outcome.status == "success" and outcome.exit_code == 0
    assert (tmp_path / "log").read_text() == "hello\nmaster at <ip>:29500\n"
    assert [line for line, _, _ in lines] == ["hello\n", "master at <ip>:29500\n"]
    # each line comes with the time it was read from the pipe, noted before it was handed on
    (_, first, handed_first), (_, second, handed_second) = lines
    assert first <= second and first <= handed_first and second <= handed_second


def test_nonzero_exit_is_a_failure_with_the_last_error_lines(tmp_path):
    outcome = execute_launch(launch("""
        print('step 1 ok')
        raise RuntimeError('CUDA out of memory on rank 3')
    """), tmp_path / "log", timeout_s=30, hang_timeout_s=30)
    assert outcome.status == "failed" and outcome.exit_code == 1
    assert "exited with code 1" in outcome.reason
    assert "RuntimeError: CUDA out of memory on rank 3" in outcome.reason


def test_a_process_killed_from_outside_is_terminated_not_failed(tmp_path):
    outcome = execute_launch(launch("""
        import os, signal
        print('step 1 ok', flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """), tmp_path / "log", timeout_s=30, hang_timeout_s=30)
    assert outcome.status == "terminated" and outcome.exit_code == -signal.SIGKILL
    # SIGKILL is what the kernel's OOM killer sends: the reason says so
    assert outcome.reason.startswith(
        "training process killed by SIGKILL (out of memory?), from outside the harness")


def test_a_rank_torchrun_reports_killed_is_terminated():
    from harness.runner.process import killed_from_outside

    summary = ["  rank      : 1 (local_rank: 1)", "  exitcode  : -9 (pid: 4242)",
               "  traceback : Signal 9 (SIGKILL) received by PID 4242"]
    assert killed_from_outside(1, summary) == (
        "training rank 1 (local rank 1): killed by SIGKILL (out of memory?), from outside the harness")
    assert killed_from_outside(1, ["Traceback", "RuntimeError: boom"]) is None


def test_ranks_torchrun_stops_after_another_rank_failed_are_a_failure_not_an_outside_kill():
    """Rank 0 exited with code 2 (a bad value it refused); torchrun then sent rank 1 SIGTERM.
    The summary lists rank 1 under Failures and rank 0 as the root cause (torch 2.14's text)."""
    from harness.runner.process import failure_reason, killed_from_outside, launch_failure_headline

    summary = ["error: grad_sync 'bogus' is not one of ddp, flat, compiled",
               "Failures:", "[1]:", "  rank      : 1 (local_rank: 1)", "  exitcode  : -15 (pid: 9959)  (SIGTERM)",
               "  traceback : Signal 15 (SIGTERM) received by PID 9959",
               "Root Cause (first observed failure):", "[0]:", "  rank      : 0 (local_rank: 0)",
               "  exitcode  : 2 (pid: 9958) "]
    assert killed_from_outside(1, summary) is None
    reason = failure_reason(summary, launch_failure_headline(1, summary))
    assert reason.startswith("rank 0 (local rank 0): exited with code 2; rank 1 (local rank 1): killed by SIGTERM")
    assert "grad_sync 'bogus' is not one of" in reason


def test_overall_timeout_stops_a_chatty_process(tmp_path):
    start = time.monotonic()
    outcome = execute_launch(launch("""
        import time
        while True:
            print('working', flush=True); time.sleep(0.1)
    """), tmp_path / "log", timeout_s=1.5, hang_timeout_s=60)
    assert outcome.status == "timeout"
    assert "overall timeout of 1.5 s" in outcome.reason
    assert time.monotonic() - start < 15
    assert "run stopped" in (tmp_path / "log").read_text()


def test_silent_process_is_a_hang(tmp_path):
    outcome = execute_launch(launch("""
        import time
        print('started', flush=True)
        time.sleep(600)
    """), tmp_path / "log", timeout_s=60, hang_timeout_s=1.0)
    assert outcome.status == "hang" and "no output for 1 s" in outcome.reason


def test_whole_process_group_is_stopped(tmp_path):
    # The child starts a grandchild that would outlive a plain kill of the child.
    pid_file = tmp_path / "grandchild.pid"
    outcome = execute_launch(launch(f"""
        import subprocess, sys, time
        p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])
        open({str(pid_file)!r}, 'w').write(str(p.pid))
        print('spawned', flush=True)
        time.sleep(600)
    """), tmp_path / "log", timeout_s=60, hang_timeout_s=1.0)
    assert outcome.status == "hang"
    grandchild = int(pid_file.read_text())
    time.sleep(0.2)
    assert not _is_running(grandchild)


def _is_running(pid: int) -> bool:
    """True unless the process is gone or a zombie (killed, waiting to be reaped by init)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def test_sigint_interrupts_and_still_reports(tmp_path):
    # A separate interpreter runs the runner; SIGINT goes to it as Ctrl-C would.
    driver = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from harness.models import LaunchSpec
        from harness.runner.process import execute_launch
        spec = LaunchSpec(argv=[sys.executable, '-c', "import time\\nprint('go', flush=True)\\ntime.sleep(600)"],
                          log_format='megatron')
        outcome = execute_launch(spec, Path({str(tmp_path / 'log')!r}), timeout_s=60, hang_timeout_s=60)
        print('STATUS', outcome.status, flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", driver], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if (tmp_path / "log").exists() and "go" in (tmp_path / "log").read_text():
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=30)
    assert "STATUS interrupted" in out
    assert "interrupted by the user" in (tmp_path / "log").read_text()


def test_missing_executable_is_a_failure_not_a_crash(tmp_path):
    spec = LaunchSpec(argv=["/nonexistent/python"], log_format="megatron")
    outcome = execute_launch(spec, tmp_path / "log", timeout_s=5, hang_timeout_s=5)
    assert outcome.status == "failed" and "could not start" in outcome.reason


@pytest.mark.slow
def test_a_rank_killed_by_sigkill_under_torchrun_is_named_with_the_signal(tmp_path):
    pytest.importorskip("torch")
    script = tmp_path / "worker.py"
    script.write_text(textwrap.dedent("""
        import os, signal, time
        print('rank', os.environ['RANK'], 'started', flush=True)
        if os.environ['RANK'] == '1':
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(60)
    """))
    spec = LaunchSpec(argv=[sys.executable, "-m", "torch.distributed.run", "--standalone",
                            "--nproc-per-node=2", str(script)], log_format="megatron")
    outcome = execute_launch(spec, tmp_path / "log", timeout_s=120, hang_timeout_s=120)
    assert outcome.status == "terminated" and outcome.exit_code == 1
    assert outcome.reason.startswith(
        "training rank 1 (local rank 1): killed by SIGKILL (out of memory?), from outside the harness"), \
        outcome.reason


def test_the_job_secret_does_not_reach_the_training_processes(tmp_path):
    import os

    outcome = execute_launch(launch("import os; print('secret:', os.environ.get('HARNESS_JOB_SECRET'))"),
                             tmp_path / "log", base_env={**os.environ, "HARNESS_JOB_SECRET": "s" * 32},
                             timeout_s=30, hang_timeout_s=30)
    assert outcome.status == "success" and (tmp_path / "log").read_text() == "secret: None\n"
