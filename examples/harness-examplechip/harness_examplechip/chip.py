"""What an examplechip is: one usable core of this machine's CPU.

A real vendor's package asks its driver here (its SMI library, like the nvidia vendor asks
NVML); this one reads Linux's own tables (/proc/cpuinfo and the process's CPU affinity).
"""

from __future__ import annotations

import os
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
#: The highest clock the kernel's frequency driver reports for a core (kHz); virtual machines
#: often have none, and /proc/cpuinfo's "cpu MHz" (the current clock) stands in.
MAX_FREQ = Path("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq")
MODEL = "EC-1"

# Peak FLOPs per cycle of one core, by the widest vector/matrix unit the core has (first
# listed flag it reports wins): 2 FMA units x lanes x 2 (multiply and add); AMX's tile unit
# does 1024 bf16 FLOPs a cycle. bf16 without a bf16 unit runs in the fp32 lanes. fp16 is
# not listed: the backend declares no fp16 for this chip.
FLOPS_PER_CYCLE: tuple[tuple[str, dict[str, int]], ...] = (
    ("amx_bf16", {"fp32": 64, "bf16": 1024}),
    ("avx512_bf16", {"fp32": 64, "bf16": 128}),
    ("avx512f", {"fp32": 64, "bf16": 64}),
    ("avx2", {"fp32": 32, "bf16": 32}),
)


def cpu_facts(text: str | None = None) -> dict[str, str]:
    """The first processor's fields of /proc/cpuinfo (model name, cpu MHz, flags); reading this
    machine's, also "max MHz" where the frequency driver reports the highest clock."""
    facts: dict[str, str] = {}
    if text is None:
        try:
            text = CPUINFO.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return {}
        try:
            facts["max MHz"] = str(int(MAX_FREQ.read_text(encoding="ascii")) / 1000)
        except (OSError, ValueError):
            pass
    for line in text.splitlines():
        if not line.strip():
            break  # the end of the first processor's block
        key, _, value = line.partition(":")
        facts[key.strip()] = value.strip()
    return facts


def usable_cores() -> list[int]:
    """The cores this process may run on, in the kernel's numbering: the chips."""
    return sorted(os.sched_getaffinity(0))


def peak_flops_per_chip(facts: dict[str, str], precision: str) -> float | None:
    """Nominal peak FLOP/s of one core in ``precision`` at its highest clock ("max MHz", else
    "cpu MHz"), or None when the clock or the vector unit is unknown (no MFU then, rather than
    a guess). A peak at a clock below the core's boost would be understated: certification's
    matmul probe would measure one core above it."""
    try:
        hz = float(facts.get("max MHz") or facts["cpu MHz"]) * 1e6
    except (KeyError, ValueError):
        return None
    flags = set(facts.get("flags", "").split())
    for flag, per_cycle in FLOPS_PER_CYCLE:
        if flag in flags:
            cycles = per_cycle.get(precision)
            return cycles * hz if cycles else None
    return None
