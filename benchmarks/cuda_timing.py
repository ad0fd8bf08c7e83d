"""Timing a piece of GPU work by CUDA events, shared by the benchmarks of single kernels."""

from __future__ import annotations

import statistics

import torch


def median_ms(fn, repeats: int, warmup: int = 3) -> float:
    """The median milliseconds of ``fn()`` on the current stream over ``repeats`` timed calls,
    after ``warmup`` untimed ones (compilation, autotuning, allocator growth)."""
    times = []
    for i in range(repeats + warmup):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append(start.elapsed_time(end))
    return statistics.median(times)
