"""Run a launch in its own process group, tee its output, enforce timeouts."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from harness.models import LaunchSpec, ProcessOutcome
from harness.runner.scrub import scrub_line

KILL_GRACE_S = 10.0
_ERROR_MARKERS = ("Traceback", "Error", "error:", "FAILED", "Killed", "nan", "NaN")


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _stop_group(proc: subprocess.Popen, grace_s: float = KILL_GRACE_S) -> None:
    """SIGTERM the whole process group, then SIGKILL whatever is left after ``grace_s``."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            # The leader is gone; make sure no child of it survives either.
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            return
        except subprocess.TimeoutExpired:
            continue


def failure_reason(tail: list[str], headline: str) -> str:
    """A reason for a failed run: the headline and the last error lines of the log."""
    error_lines = [line for line in tail if any(m in line for m in _ERROR_MARKERS)]
    picked = (error_lines or tail)[-5:]
    detail = " | ".join(line.strip() for line in picked if line.strip())
    return f"{headline}: {detail}" if detail else headline


def execute_launch(
    launch: LaunchSpec,
    log_path: Path,
    *,
    base_env: dict[str, str] | None = None,
    timeout_s: float,
    hang_timeout_s: float,
    on_line: Callable[[str], None] | None = None,
) -> ProcessOutcome:
    """Execute ``launch``; every line goes (scrubbed) to ``log_path`` and to ``on_line``."""
    env = dict(os.environ if base_env is None else base_env)
    env.update(launch.env)
    env.setdefault("PYTHONUNBUFFERED", "1")
    log_path.parent.mkdir(parents=True, exist_ok=True)
    started = _now()
    tail: deque[str] = deque(maxlen=40)
    try:
        proc = subprocess.Popen(
            launch.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=launch.cwd,
            start_new_session=True,  # its own process group: we can stop all of it
        )
    except OSError as exc:
        log_path.write_text(f"could not start {launch.argv[0]!r}: {exc}\n")
        return ProcessOutcome(
            status="failed", exit_code=None, reason=f"could not start {launch.argv[0]!r}: {exc}",
            log_path=str(log_path), started_at=started, finished_at=_now(),
        )

    lines: queue.Queue[str | None] = queue.Queue()

    def reader() -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            lines.put(raw.decode("utf-8", errors="replace"))
        lines.put(None)

    thread = threading.Thread(target=reader, name="harness-log-reader", daemon=True)
    thread.start()

    status, reason = "success", None
    deadline = time.monotonic() + timeout_s
    last_output = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log:
        try:
            while True:
                try:
                    line = lines.get(timeout=0.25)
                except queue.Empty:
                    now = time.monotonic()
                    if now > deadline:
                        status, reason = "timeout", f"exceeded the overall timeout of {timeout_s:g} s"
                        break
                    if now - last_output > hang_timeout_s:
                        status = "hang"
                        reason = f"no output for {hang_timeout_s:g} s (hang timeout)"
                        break
                    continue
                if line is None:
                    break
                last_output = time.monotonic()
                clean = scrub_line(line)
                log.write(clean)
                log.flush()
                tail.append(clean)
                if on_line is not None:
                    on_line(clean)
                if time.monotonic() > deadline:
                    status, reason = "timeout", f"exceeded the overall timeout of {timeout_s:g} s"
                    break
        except KeyboardInterrupt:
            status, reason = "interrupted", "interrupted by the user (SIGINT)"
        finally:
            if status != "success":
                _stop_group(proc)
                log.write(f"[harness] run stopped: {reason}\n")
            exit_code = proc.wait()
            thread.join(timeout=5)
            # Drain lines that arrived after the loop ended so nothing is lost.
            while True:
                try:
                    line = lines.get_nowait()
                except queue.Empty:
                    break
                if line is not None:
                    clean = scrub_line(line)
                    log.write(clean)
                    tail.append(clean)
    if status == "success" and exit_code != 0:
        status = "failed"
        reason = failure_reason(list(tail), f"training process exited with code {exit_code}")
    elif status != "success":
        reason = failure_reason(list(tail), reason or status)
    return ProcessOutcome(
        status=status,  # type: ignore[arg-type]
        exit_code=exit_code,
        reason=reason,
        log_path=str(log_path),
        started_at=started,
        finished_at=_now(),
    )
