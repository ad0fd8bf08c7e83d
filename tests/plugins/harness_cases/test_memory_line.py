"""The peak-memory line the training scripts write is the one harness reads."""

from __future__ import annotations

import sys

from harness.logparse.peak_memory import peak_memory_bytes
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR


def test_written_line_reads_back_as_its_figure(monkeypatch):
    monkeypatch.syspath_prepend(str(SHARED_SCRIPTS_DIR))
    from memory_line import memory_line, process_peak_rss_mb

    line = memory_line(5120.44, "cuda max allocated, max over ranks")
    assert line == "peak memory (MB): 5120.4 (cuda max allocated, max over ranks)"
    assert peak_memory_bytes(f"[Rank 0] (after 30 iterations) {line}") == int(5120.4 * 2**20)
    assert peak_memory_bytes("> " + memory_line(process_peak_rss_mb(), "process max RSS")) > 0
    sys.modules.pop("memory_line", None)
