"""The memory planner: before launching, make sure the run fits the device's memory.

The framework plugin that owns the model estimates the per-device peak of the resolved config
and of alternatives (the ``memory_plan`` hook); the planner keeps the first that fits the
smallest device the run uses, or refuses in one line naming what would fit. It never changes
a key the user set (on the command line or in a sweep file). A refusal is an ``UnavailableError``, like a plugin's
``unsupported_reason``: ``harness run`` exits 2 and a sweep lists the point as skipped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from harness.config_resolution import SETTINGS_KEYS, convert_param, set_by_user
from harness.errors import UnavailableError
from harness.models.config import ResolvedConfig, RunSettings
from harness.models.context import RunContext
from harness.models.memory import MemoryCandidate, MemoryEstimate

if TYPE_CHECKING:
    from harness.dispatch import HookRouter

GIB = 2**30
PLANNER_SOURCE = "memory-planner"
# What the framework's allocator cannot hand out: CUDA context, library workspaces, cached
# but fragmented blocks. NVML's reading of device memory used at the peak runs a few percent
# above the allocator's peak; 5%, at least 2 GiB, keeps a margin above that.
RESERVE_FRACTION = 0.05
RESERVE_MIN_BYTES = 2 * GIB


def usable_bytes(device_memory_bytes: int) -> int:
    """Bytes a framework can allocate on a device of ``device_memory_bytes``."""
    return device_memory_bytes - max(RESERVE_MIN_BYTES, int(device_memory_bytes * RESERVE_FRACTION))


def device_memory(context: RunContext) -> int | None:
    """Total memory of the smallest device the run uses, or None when unknown (CPU, no NVML)."""
    if context.devices.kind == "cpu":
        return None
    used = context.devices.devices[: context.config.settings.nproc]
    sizes = [d.memory_bytes for d in used if d.memory_bytes]
    return min(sizes) if sizes and len(sizes) == len(used) else None


def gib(n: int) -> str:
    return f"{n / GIB:,.1f} GiB"


def describe(estimate: MemoryEstimate) -> str:
    parts = ", ".join(f"{name} {gib(value)}" for name, value in estimate.components.items() if value)
    return f"{gib(estimate.total_bytes)} ({parts})" if parts else gib(estimate.total_bytes)


def apply_overrides(config: ResolvedConfig, overrides: dict) -> ResolvedConfig:
    """The config with the planner's changes, each recorded as coming from the planner."""
    settings = config.settings.model_dump(exclude={"world_size", "run_mode", "global_batch_size"})
    params = dict(config.params)
    sources = dict(config.sources)
    for key, value in overrides.items():
        if key in SETTINGS_KEYS:
            settings[key] = value
        else:
            params[key] = convert_param(key, value, params[key])
        sources[key] = PLANNER_SOURCE
    return config.model_copy(update={"settings": RunSettings(**settings), "params": params,
                                     "sources": sources})


def fit_to_memory(router: HookRouter, context: RunContext) -> RunContext:
    """Return the context to run (possibly with a smaller-memory config, its estimate recorded),
    or raise UnavailableError when no candidate fits. ``planner_note`` says what it did."""
    capacity = device_memory(context)
    if capacity is None:
        return context
    plan = router.memory_plan(context, capacity)
    if plan is None or not plan.candidates:
        return context
    usable = usable_bytes(capacity)
    pinned = {k for k, source in context.config.sources.items() if set_by_user(source)}
    first = plan.candidates[0]
    allowed: list[MemoryCandidate] = [c for c in plan.candidates if not (set(c.overrides) & pinned)]
    chosen = next((c for c in allowed if c.estimate.total_bytes <= usable), None)
    device_name = context.devices.devices[0].name
    if chosen is None:
        blocked = [c for c in plan.candidates if c.estimate.total_bytes <= usable and c not in allowed]
        fits = [_as_flags(c) + f" ({gib(c.estimate.total_bytes)})" for c in blocked] + list(plan.hints)
        raise UnavailableError(
            f"{context.case.name} needs about {describe(first.estimate)} per device as configured; "
            f"{device_name} has {gib(usable)} usable of {gib(capacity)}. "
            + ("Would fit: " + "; or ".join(fits) + "." if fits else
               "Nothing this machine offers would fit.")
        )
    new_context = context.model_copy(update={"memory_estimate": chosen.estimate})
    if chosen.overrides:
        new_context = new_context.model_copy(
            update={"config": apply_overrides(context.config, chosen.overrides)})
    return new_context


def _as_flags(candidate: MemoryCandidate) -> str:
    return " ".join(f"--set {k}={v}" for k, v in candidate.overrides.items()) or "as configured"


def planner_note(context: RunContext) -> str:
    """One line for the progress display: the estimate, and what the planner changed."""
    estimate = context.memory_estimate
    if estimate is None:
        return ""
    note = f"estimated peak {describe(estimate)} per device"
    changed = {k: context.config.params.get(k, getattr(context.config.settings, k, None))
               for k, source in context.config.sources.items() if source == PLANNER_SOURCE}
    if changed:
        note += "; to fit, the planner set " + ", ".join(f"{k}={v}" for k, v in changed.items())
    return note
