"""Run a launch in its own process group, tee its output, enforce timeouts."""

from __future__ import annotations

import errno
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
from collections import deque
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from harness.launch import exit_description, torchrun_failed_ranks
from harness.models import LaunchSpec, ProcessOutcome
from harness.runner.job_link import JOB_SECRET_ENV, PEER_STOP_GRACE_S, peer_failure
from harness.runner.scrub import scrub_line
from harness.runner.signals import Terminated, deferred_signals
from harness.runner.tree import ProcessTree, become_subreaper

KILL_GRACE_S = 10.0
GUARD = Path(__file__).with_name("guard.py")
TREE_REFRESH_S = 1.0
# An error line: a traceback, an exception name, an error/failure word, a killed process, a
# NaN loss. Not Megatron's "number of nan iterations: 0" counter on every iteration line.
_ERROR_LINE = re.compile(
    r"Traceback|\b\w*(?:Error|Exception)\b|\berror:|FAILED|Killed|No space left"
    r"|\b(?:nan|NaN)\b(?! iterations)"
)
REASON_LINES, REASON_LINE_CHARS = 3, 240


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _short(line: str) -> str:
    line = line.strip()
    return line if len(line) <= REASON_LINE_CHARS else line[: REASON_LINE_CHARS - 3] + "..."


def failure_reason(tail: list[str], headline: str) -> str:
    """A short reason for a failed run: the headline and the last error lines of the log
    (at most 3, each cut to 240 characters); the last line when no line looks like an error."""
    lines = [line for line in tail if line.strip()]
    error_lines = [line for line in lines if _ERROR_LINE.search(line)]
    picked = error_lines[-REASON_LINES:] if error_lines else lines[-1:]
    detail = " | ".join(_short(line) for line in picked)
    return f"{headline}: {detail}" if detail else headline


def launch_failure_headline(exit_code: int, tail: list[str]) -> str:
    """What ended a failed launch: the ranks a launcher's summary names (``rank 1 (local rank
    0): killed by SIGKILL (out of memory?)``), else how the training process itself ended."""
    ranks = torchrun_failed_ranks(tail)
    if ranks:
        return "; ".join(ranks)
    return f"training process {exit_description(exit_code)}"


def execute_launch(
    launch: LaunchSpec,
    log_path: Path,
    *,
    base_env: dict[str, str] | None = None,
    timeout_s: float,
    hang_timeout_s: float,
    on_line: Callable[[str, float], None] | None = None,
) -> ProcessOutcome:
    """Execute ``launch``; every line goes (scrubbed) to ``log_path`` and to ``on_line``, with
    the ``time.monotonic()`` at which it was read from the pipe: the reader thread notes it, so
    however long the loop here takes over a line (the process-tree refresh, a slow observer),
    the arrival times stay those of the output."""
    env = dict(os.environ if base_env is None else base_env) if launch.inherit_env else {}
    env.update(launch.env)
    env.pop(JOB_SECRET_ENV, None)  # the nodes' key stays with the harness, not the ranks
    env.setdefault("PYTHONUNBUFFERED", "1")
    started = _now()
    tail: deque[str] = deque(maxlen=40)
    try:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log = open(log_path, "w", encoding="utf-8")
    except OSError as exc:
        return ProcessOutcome(status="failed", exit_code=None,
                              reason=f"could not create the log {log_path}: {exc.strerror or exc}",
                              log_path=str(log_path), started_at=started, finished_at=_now())
    become_subreaper()
    children_before = ProcessTree.own_children()
    try:
        _check_startable(launch.argv[0], env, launch.cwd)
        proc = subprocess.Popen(
            # the guard starts the launch and makes every process of it die with the harness
            [sys.executable, str(GUARD), str(os.getpid()), "--", *launch.argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=launch.cwd,
            start_new_session=True,  # its own process group: we can stop all of it
        )
    except OSError as exc:
        reason = f"could not start {launch.argv[0]!r}: {exc}"
        _write_quietly(log, reason + "\n")
        log.close()
        return ProcessOutcome(status="failed", exit_code=None, reason=reason,
                              log_path=str(log_path), started_at=started, finished_at=_now())
    tree = ProcessTree(proc.pid, children_before)

    lines: queue.Queue[tuple[float, str] | None] = queue.Queue()

    def reader() -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            lines.put((time.monotonic(), raw.decode("utf-8", errors="replace")))
        lines.put(None)

    thread = threading.Thread(target=reader, name="harness-log-reader", daemon=True)
    thread.start()

    status, reason = "success", None
    deadline = time.monotonic() + timeout_s
    last_output = last_refresh = time.monotonic()
    log_error: str | None = None
    stop_grace = KILL_GRACE_S
    with _closing_quietly(log):
        try:
            while True:
                now = time.monotonic()
                if now - last_refresh > TREE_REFRESH_S:
                    tree.refresh()  # remember workers before a launcher can orphan them
                    last_refresh = now
                if (peer := peer_failure()) is not None:
                    # its ranks would wait in a collective for ranks that are gone
                    status, reason, stop_grace = "failed", f"stopped: {peer}", PEER_STOP_GRACE_S
                    break
                try:
                    item = lines.get(timeout=0.25)
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
                if item is None:
                    break
                arrived, line = item
                last_output = time.monotonic()
                clean = scrub_line(line)
                tail.append(clean)
                try:
                    log.write(clean)
                    log.flush()
                except OSError as exc:
                    # A full disk: training on without a log would measure nothing.
                    log_error = f"could not write the log {log_path}: {exc.strerror or exc}"
                    status, reason = "failed", log_error
                    break
                if on_line is not None:
                    on_line(clean, arrived)
                if time.monotonic() > deadline:
                    status, reason = "timeout", f"exceeded the overall timeout of {timeout_s:g} s"
                    break
        except KeyboardInterrupt:
            status, reason = "interrupted", "interrupted by the user (SIGINT)"
        except Terminated as exc:
            status, reason = "terminated", str(exc)
        finally:
            # Whatever signals arrive now, the processes are stopped and the outcome returned.
            with deferred_signals():
                survivors = _finish(proc, tree, stopping=status != "success", grace_s=stop_grace)
                if status != "success" and log_error is None:
                    _write_quietly(log, f"[harness] run stopped: {reason}\n")
                exit_code = proc.wait()
                thread.join(timeout=5)
                # Drain lines that arrived after the loop ended so nothing is lost.
                while True:
                    try:
                        item = lines.get_nowait()
                    except queue.Empty:
                        break
                    if item is not None:
                        clean = scrub_line(item[1])
                        tail.append(clean)
                        if log_error is None:
                            _write_quietly(log, clean)
    if status == "success" and exit_code != 0:
        killed = killed_from_outside(exit_code, list(tail))
        status = "terminated" if killed else "failed"
        reason = failure_reason(list(tail), killed or launch_failure_headline(exit_code, list(tail)))
    elif status != "success" and log_error is None:
        reason = failure_reason(list(tail), reason or status)
    if survivors:
        reason = (reason + "; " if reason else "") + (
            f"{len(survivors)} process(es) could not be stopped: pids {', '.join(map(str, survivors))}")
    return ProcessOutcome(
        status=status,  # type: ignore[arg-type]
        exit_code=exit_code,
        reason=reason,
        log_path=str(log_path),
        started_at=started,
        finished_at=_now(),
    )


def killed_from_outside(exit_code: int, tail: list[str]) -> str | None:
    """Why a launch that the harness did not stop ended by a signal, or None: the process
    itself (a negative exit code) or the rank torchrun's failure summary gives as the root
    cause, killed by one. Such a repeat was terminated, not a failed training; SIGKILL is
    also what the kernel's OOM killer sends, and the reason says so. Ranks killed after the
    root cause are torchrun's own SIGTERMs, stopping the others once one rank has failed."""
    if exit_code < 0:
        return f"training process {exit_description(exit_code)}, from outside the harness"
    ranks = torchrun_failed_ranks(tail)  # the root cause first
    if ranks and ": killed by " in ranks[0]:
        return f"training {ranks[0]}, from outside the harness"
    return None


def _check_startable(program: str, env: dict[str, str], cwd: str | None) -> None:
    """The guard would start the launch; say here, as starting it would, when it cannot be."""
    where = program if os.sep in program else shutil.which(program, path=env.get("PATH"))
    if where is not None and not os.path.isabs(where) and cwd:
        where = os.path.join(cwd, where)
    if where is None or not os.path.isfile(where):
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    if not os.access(where, os.X_OK):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)


def _finish(proc: subprocess.Popen, tree: ProcessTree, *, stopping: bool,
            grace_s: float = KILL_GRACE_S) -> list[int]:
    """Stop the launch's whole tree (when ``stopping``) or whatever it left running after it
    ended by itself (daemons, orphaned workers); returns the pids that survived."""
    if stopping:
        try:
            pgid = os.getpgid(proc.pid)
        except ProcessLookupError:
            pgid = None
        return tree.stop(grace_s, leader_pgid=pgid)
    proc.wait()
    tree.refresh()
    if tree.alive():
        return tree.stop(KILL_GRACE_S)
    tree.reap()
    return []


@contextmanager
def _closing_quietly(log):
    """Close the log at the end; on a full disk closing fails too, and that is reported."""
    try:
        yield log
    finally:
        try:
            log.close()
        except OSError:
            pass


def _write_quietly(log, text: str) -> None:
    """Write to the log where there is room; a full disk is already reported."""
    try:
        log.write(text)
        log.flush()
    except (OSError, ValueError):
        pass
