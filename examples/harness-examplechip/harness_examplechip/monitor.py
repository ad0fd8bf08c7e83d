"""examplechip's own measurement: the training processes' CPU busy time and memory.

While a run executes, a thread samples every process descended from harness (the launcher
and its training processes) from /proc: CPU time used (user + system) and resident memory.
A real vendor samples its devices here instead (power, utilisation, memory through its
SMI library), as the nvidia vendor does with NVML.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")
TICKS_PER_S = os.sysconf("SC_CLK_TCK")
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE")


@dataclass
class ProcessSample:
    parent: int
    cpu_s: float


def read_stat(pid: int) -> ProcessSample | None:
    """Parent pid and CPU seconds (utime + stime) of a process, None if it is gone."""
    try:
        text = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    # The command name is in parentheses and may hold spaces: fields start after the last ')'.
    fields = text[text.rindex(")") + 2:].split()
    return ProcessSample(parent=int(fields[1]), cpu_s=(int(fields[11]) + int(fields[12])) / TICKS_PER_S)


def read_rss_bytes(pid: int) -> int:
    try:
        return int((PROC / str(pid) / "statm").read_text().split()[1]) * PAGE_BYTES
    except (OSError, IndexError, ValueError):
        return 0


def descendants(root: int) -> dict[int, ProcessSample]:
    """Every live process below ``root``, with its sample."""
    samples = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            sample = read_stat(int(entry.name))
            if sample is not None:
                samples[int(entry.name)] = sample
    below, frontier = {}, {root}
    while frontier:
        frontier = {pid for pid, s in samples.items() if s.parent in frontier and pid not in below}
        below.update({pid: samples[pid] for pid in frontier})
    return below


class ProcessTreeMonitor:
    """Samples the process tree under this process every ``interval_s`` until stopped."""

    def __init__(self, interval_s: float = 0.25, root: int | None = None):
        self.interval_s = interval_s
        self.root = root if root is not None else os.getpid()
        self.cpu_s: dict[int, float] = {}  # last CPU time seen of every process
        self.peak_rss_bytes = 0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="examplechip-monitor", daemon=True)
        self._started = 0.0

    def start(self) -> "ProcessTreeMonitor":
        self._started = time.monotonic()
        self._thread.start()
        return self

    def sample(self) -> None:
        tree = descendants(self.root)
        for pid, process in tree.items():
            self.cpu_s[pid] = max(self.cpu_s.get(pid, 0.0), process.cpu_s)
        self.peak_rss_bytes = max(self.peak_rss_bytes, sum(read_rss_bytes(pid) for pid in tree))
        self.samples += 1

    def _loop(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def stop(self) -> dict[str, float | int]:
        """Stop sampling; the measurements for ``outcome.extras``. CPU time a process used
        after its last sample is not counted (at most one interval's worth)."""
        self._stop.set()
        self._thread.join()
        wall = time.monotonic() - self._started
        busy = sum(self.cpu_s.values())
        return {
            "examplechip_busy_s": round(busy, 3),
            "examplechip_busy_chips": round(busy / wall, 3) if wall > 0 else 0.0,
            "examplechip_peak_rss_mib": round(self.peak_rss_bytes / 2**20, 1),
            "examplechip_samples": self.samples,
        }
