"""Diagnostics only: a kernel profile of the training steps named in HARNESS_PROFILE_STEPS.

``HARNESS_PROFILE_STEPS=a-b`` (or ``a``) makes rank 0 of a training script (the PyTorch
plugin's and the Megatron-core plugin's; torch only) profile steps a to b
and print, as ``> profile:`` lines, the wall time of those steps beside the device's kernel time
(their difference is time the device sat idle: the host launching, waiting for data or
synchronising), the kernel time per category and the top kernels, and the host operations
that took the most of the host's own time (where a host-bound step's time goes). Nothing in a
result depends on it.
"""

from __future__ import annotations

import os
import time

PROFILE_ENV = "HARNESS_PROFILE_STEPS"
# Kernels listed by name, longest first: enough to account for a GPT step's distinct GEMMs,
# attention and fused kernels of both frameworks.
TOP_KERNELS = 25
# Host operations listed by their self time (excluding the operations they call), longest first.
TOP_HOST_OPS = 15
# Kernel-name fragments -> category, first match wins (cuBLAS/CUTLASS GEMMs on Hopper are
# nvjet/sm90 kernels; flash and cuDNN attention kernels carry these names). cuDNN's batch norm
# and convolutions (implicit GEMMs, dgrad/wgrad) come before the cuDNN and GEMM fragments.
KERNEL_CATEGORIES = (("nccl", "communication"), ("flash", "attention"), ("fmha", "attention"),
                     ("cudnn::fusion", "attention"),  # cuDNN SDPA's helpers (convert_dq_to_16bits)
                     ("batchnorm", "batch norm"), ("conv", "convolution"), ("dgrad", "convolution"),
                     ("wgrad", "convolution"), ("implicit_gemm", "convolution"),
                     ("cudnn", "attention"), ("adam", "optimizer"), ("gemm", "matmul"),
                     ("nvjet", "matmul"), ("sm90_", "matmul"), ("cutlass", "matmul"),
                     ("triton", "fused elementwise (compiled)"),
                     # Eager frameworks (Megatron-core without Transformer Engine or apex).
                     ("layer_norm", "layer norm (eager)"), ("gammabeta", "layer norm (eager)"),
                     ("dropout", "dropout (eager)"), ("softmax", "softmax and loss (eager)"),
                     ("nll_loss", "softmax and loss (eager)"), ("fused", "fused elementwise (jit)"),
                     ("elementwise_kernel", "elementwise (eager)"), ("reduce_kernel", "reductions (eager)"))


def profile_window(world_rank: int, environ=os.environ) -> tuple[int, int] | None:
    """Steps ``a-b`` from HARNESS_PROFILE_STEPS to profile on rank 0, or None."""
    raw = environ.get(PROFILE_ENV, "")
    if not raw or world_rank != 0:
        return None
    first, _, last = raw.partition("-")
    return int(first), int(last or first)


def kernel_breakdown(events, steps: int, wall_s: float | None = None) -> list[str]:
    """The ``> profile:`` lines for profiler ``key_averages()`` events over ``steps`` steps."""
    totals: dict[str, float] = {}
    kernels = []
    for event in events:
        device_us = getattr(event, "device_time_total", None) or getattr(event, "cuda_time_total", 0)
        if event.device_type.name == "CPU" or device_us <= 0:  # device kernels only
            continue
        if getattr(event, "is_user_annotation", False) or "#" in event.key:
            # A named range (``Optimizer.step#AdamW.step``) spans kernels counted on their own.
            continue
        name = event.key.lower()
        category = next((c for frag, c in KERNEL_CATEGORIES if frag in name), "other")
        totals[category] = totals.get(category, 0.0) + device_us
        kernels.append((device_us, event.key))
    busy = sum(totals.values())
    lines = [f"> profile: GPU kernel time per step {busy / steps / 1000:.1f} ms over {steps} steps"]
    if wall_s is not None and wall_s > 0:
        wall_ms = wall_s / steps * 1000
        lines.append(f"> profile: wall time per step {wall_ms:.1f} ms, kernels busy "
                     f"{busy / steps / 1000 / wall_ms:.1%} of it (profiler overhead included)")
    for category, us in sorted(totals.items(), key=lambda kv: -kv[1]):
        lines.append(f">   {category:<30} {us / steps / 1000:8.1f} ms  {us / max(busy, 1e-9):6.1%}")
    for us, name in sorted(kernels, reverse=True)[:TOP_KERNELS]:
        lines.append(f">   kernel {us / steps / 1000:8.2f} ms  {name[:110]}")
    return lines


def host_breakdown(events, steps: int) -> list[str]:
    """The ``> profile:`` lines of the host operations (``key_averages()`` events) that took the
    most self time on the host per step over ``steps`` steps: framework operators, launches,
    synchronisations, Python-level named ranges."""
    ops = [(getattr(event, "self_cpu_time_total", 0.0), event.key) for event in events
           if event.device_type.name == "CPU"]
    ops = [(us, name) for us, name in ops if us > 0]
    if not ops:
        return []
    lines = [f"> profile: host self time per step {sum(us for us, _ in ops) / steps / 1000:.1f} ms"
             " (all host operations the profiler saw)"]
    for us, name in sorted(ops, reverse=True)[:TOP_HOST_OPS]:
        lines.append(f">   host {us / steps / 1000:8.2f} ms  {name[:110]}")
    return lines


class StepProfiler:
    """Profiles the window's steps: call ``begin(step)`` at a step's start and ``end(step)``
    after the step has synchronised with the device; prints through ``log``."""

    def __init__(self, world_rank: int, device_type: str, log, environ=os.environ):
        self.window = profile_window(world_rank, environ)
        self.device_type = device_type
        self.log = log
        self._profiler = None
        self._started = 0.0

    def begin(self, step: int) -> None:
        if not self.window or step != self.window[0]:
            return
        from torch.profiler import ProfilerActivity, profile

        # The device's own activity (CUDA, XPU, ...) where the profiler has one.
        device_activity = getattr(ProfilerActivity, self.device_type.upper(), None)
        activities = {ProfilerActivity.CPU, *filter(None, [device_activity])}
        self._profiler = profile(activities=sorted(activities, key=str))
        self._profiler.__enter__()
        self._started = time.perf_counter()

    def end(self, step: int) -> None:
        if self._profiler is None or step != self.window[1]:
            return
        wall = time.perf_counter() - self._started
        self._profiler.__exit__(None, None, None)
        steps = self.window[1] - self.window[0] + 1
        events = self._profiler.key_averages()
        for line in kernel_breakdown(events, steps, wall) + host_breakdown(events, steps):
            self.log(line)
        self._profiler = None
