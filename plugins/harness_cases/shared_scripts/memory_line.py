"""The peak-memory line every training script prints once it has trained (standard library only).

harness reads the figure from any built-in script's log through one rule
(``harness.logparse.peak_memory``); the scripts write it through this one function.
"""

from __future__ import annotations

import resource


def memory_line(peak_mb: float, source: str) -> str:
    """``peak memory (MB): <figure> (<what was measured>)``."""
    return f"peak memory (MB): {peak_mb:.1f} ({source})"


def process_peak_rss_mb() -> float:
    """This process's peak resident memory in MiB (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
