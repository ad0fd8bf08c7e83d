"""The launch's guard: the one process the harness starts for a launch, which starts the
launch itself and makes every process of it die with the harness.

``python guard.py HARNESS_PID -- ARGV...``

A launcher's workers are its children, not the harness's: when the harness is killed with
SIGKILL, nothing of it runs to stop them, and they lived on (a stopped worker indefinitely, a
running one until its output pipe broke). ``PR_SET_PDEATHSIG`` reaches only a process's
direct child, so the guard is that child: the kernel signals it (SIGUSR2) when the harness
dies, and the guard, a subreaper that every orphan below it is reparented to, SIGKILLs every
process below it (SIGKILL ends stopped ones too) and ends. While the harness lives, the guard
only waits: the harness stops the launch's processes itself (it signals the whole group and
every process it saw), and the guard ends as the launch's process ended, with its exit code
or by its signal, so the harness sees what it would see of the launch itself.

Standard library only and run as a file (not ``-m harness...``): it starts in any interpreter
in a few milliseconds.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
PARENT_DIED = signal.SIGUSR2


def _prctl(option: int, value: int) -> bool:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (from /proc: parent of each)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        # pid (comm) state ppid ...: comm may hold spaces and parentheses
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _kill_everything_below(_signum=None, _frame=None) -> None:
    """The harness died: nothing of its launch may outlive it."""
    for _ in range(3):  # processes forked meanwhile are caught by the next round
        pids = descendants(os.getpid())
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        _reap_all()
    os._exit(137)


def _reap_all() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(argv: list[str]) -> int:
    harness_pid, separator, command = int(argv[0]), argv[1], argv[2:]
    if separator != "--" or not command:
        print("usage: guard.py HARNESS_PID -- ARGV...", file=sys.stderr)
        return 2
    signal.signal(PARENT_DIED, _kill_everything_below)
    # The harness stops the launch through its process group; the guard waits for it. (A
    # handler, not SIG_IGN: the launch gets the default back when it is executed.)
    for stop in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(stop, _ignore)
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)
    _prctl(_PR_SET_PDEATHSIG, PARENT_DIED)
    if os.getppid() != harness_pid:  # it died before the guard could ask to be told
        _kill_everything_below()
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        print(f"could not start {command[0]!r}: {exc}", file=sys.stderr, flush=True)
        return 127
    while True:  # reap orphans reparented here until the launch itself ends
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        if pid == child.pid:
            break
    code = os.waitstatus_to_exitcode(status)
    if code < 0:  # end the way the launch ended, so the harness reads the same signal
        if -code not in (signal.SIGKILL, signal.SIGSTOP):
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code & 0xFF


def _ignore(_signum, _frame) -> None:
    pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
