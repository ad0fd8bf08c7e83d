"""Every process a launch starts, so that stopping it leaves nothing behind.

Stopping the launch's process group is not enough: torchrun starts its workers in sessions of
their own, and a worker whose parent died is re-parented away from the group. So the harness
(1) becomes a child subreaper (Linux ``PR_SET_CHILD_SUBREAPER``), which makes orphaned
descendants its own children instead of init's, and (2) remembers every descendant it has
seen while the launch runs. Stopping sends SIGTERM (and SIGCONT, for processes stopped with
SIGSTOP) to all of them, SIGKILL to what is left after a grace period, reaps them, and reports
any that survived.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

import psutil

_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make orphaned descendants of this process its children (Linux); False elsewhere."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _key(proc: psutil.Process) -> tuple[int, float] | None:
    try:
        return proc.pid, proc.create_time()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


class ProcessTree:
    """The leader of a launch and every descendant seen since it started."""

    def __init__(self, leader_pid: int, children_before: set[int]):
        self.leader_pid = leader_pid
        # Children this process had before the launch: not the launch's (a test runner's own).
        self._foreign = set(children_before)
        self._known: dict[tuple[int, float], psutil.Process] = {}
        self.refresh()

    @staticmethod
    def own_children() -> set[int]:
        return {p.pid for p in psutil.Process().children()}

    def refresh(self) -> None:
        """Remember the descendants alive now (the leader's, and orphans re-parented to us).

        One pass over the process table per call: ``psutil.Process.children(recursive=True)``
        scans the whole table each time, and a launch with a compiler's worker pools has a
        hundred processes or more, which made a refresh take seconds."""
        parents: dict[int, list[int]] = {}
        for proc in psutil.process_iter():
            try:
                parents.setdefault(proc.ppid(), []).append(proc.pid)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
        me = os.getpid()
        roots = [self.leader_pid, *(pid for pid in parents.get(me, ())
                                    if pid not in self._foreign and pid != self.leader_pid)]
        # Known processes only while they run: a pid reused since is another process.
        roots += [proc.pid for proc in self._known.values() if proc.is_running()]
        seen: set[int] = set()
        while roots:
            pid = roots.pop()
            if pid in seen:
                continue
            seen.add(pid)
            roots += parents.get(pid, ())
        for pid in seen:
            try:
                proc = psutil.Process(pid)
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                continue
            key = _key(proc)
            if key is not None:
                self._known.setdefault(key, proc)

    def alive(self) -> list[psutil.Process]:
        """Known processes that still run (zombies count as gone; they are reaped below)."""
        living = []
        for proc in self._known.values():
            try:
                if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                    living.append(proc)
            except (psutil.NoSuchProcess, psutil.ZombieProcess):
                continue
        return living

    def stop(self, grace_s: float, *, leader_pgid: int | None = None) -> list[int]:
        """SIGTERM everything, SIGKILL what is left after ``grace_s``; the pids that survived."""
        self.refresh()
        if leader_pgid is not None:
            _signal_group(leader_pgid, signal.SIGTERM)
        for sig in (signal.SIGTERM, signal.SIGCONT):
            for proc in self.alive():
                _send(proc, sig)
        psutil.wait_procs(self.alive(), timeout=grace_s)
        self.refresh()  # workers a dying launcher started or orphaned at the last moment
        for proc in self.alive():
            _send(proc, signal.SIGKILL)
        if leader_pgid is not None:
            _signal_group(leader_pgid, signal.SIGKILL)
        psutil.wait_procs(self.alive(), timeout=10)
        self.reap()
        return [p.pid for p in self.alive()]

    def reap(self) -> None:
        """Collect the exit status of known processes that became our children (subreaper),
        so they do not stay behind as zombies."""
        for pid, _ in list(self._known):
            if pid == self.leader_pid:
                continue  # subprocess.Popen.wait reaps the leader
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass


def _send(proc: psutil.Process, sig: int) -> None:
    try:
        proc.send_signal(sig)
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
