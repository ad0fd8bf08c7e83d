"""The peak-memory line every built-in training script prints when it has trained.

The PyTorch scripts (``torch_setup.peak_memory_line``) and the Paddle and MXNet scripts on
hosts without a device allocator print it in their own layouts around the same field::

    [Rank 0] (after 30 iterations) peak memory (MB): 5120.4 (cuda max allocated, max over ranks)
    > peak memory (MB): 399.0 (process max RSS, rank 0)

Every log format that reads a built-in script's log (Megatron-LM, DLLogger, PaddleNLP,
PaddleClas, gluon-cv) reads the figure through this one rule.
"""

from __future__ import annotations

import re

MARKER = "peak memory (MB)"
PEAK_MEMORY_MB = re.compile(r"peak memory \(MB\):\s*([\d.]+)")


def peak_memory_bytes(line: str) -> int | None:
    """The peak the line states, in bytes; ``None`` for any other line."""
    if MARKER not in line:
        return None
    match = PEAK_MEMORY_MB.search(line)
    return int(float(match.group(1)) * 2**20) if match else None
