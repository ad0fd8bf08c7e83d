"""Samples NVIDIA GPUs through NVML in a background thread while the training processes run.

Each sample is one CSV row per GPU (``monitor.csv`` in the run folder): seconds since start,
GPU index, memory used, utilisation, power, the SM clock, and whether the driver was holding the
clocks down at that moment for power (the power cap or brake) or for heat (thermal or hardware
slowdown), from NVML's clock event reasons: 1 or 0. The summary gives what the result reports:
NVML peak memory per GPU (everything on the device, the CUDA context and caching allocator
included, so it is higher than the framework's own peak allocation), mean power, power while
busy, energy, and the utilisation while training: the mean utilisation of each GPU over the
measured steps (from the line of the last skipped step to the last step's, as the core's step
clock saw them arrive), dips included, so a data pipeline that starves the GPUs between steps
shows there while start-up, compilation and teardown do not. Without step times (a log whose
steps the harness cannot read) the span is the first busy sample to the last, which an isolated
busy sample during compilation stretches. Over the same span: the mean SM clock per GPU (beside
its maximum) and the share of samples in which the power cap, or a thermal or hardware
slowdown, held it down. A GPU at its power limit runs the same kernels slower when they follow
each other without gaps, so two runs' kernel times compare only at equal clocks.

The interval is ``HARNESS_NVIDIA_MONITOR_INTERVAL_S`` (seconds, default 1; ``0`` or ``off``
turns the monitor off).
"""

from __future__ import annotations

import csv
import os
import statistics
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

INTERVAL_ENV = "HARNESS_NVIDIA_MONITOR_INTERVAL_S"
DEFAULT_INTERVAL_S = 1.0
#: A sample counts as "busy" when every monitored GPU ran kernels at least this share of the
#: last sample period: compilation, data loading and start-up then stay out of the power
#: figure that energy per token is computed from.
BUSY_UTILIZATION_PCT = 50
CSV_HEADER = ["time_s", "gpu", "memory_used_mib", "utilization_pct", "power_w", "sm_clock_mhz",
              "power_capped", "thermal_limited"]
NVML_CLOCK_SM = 1  # nvmlClockType_t
#: NVML's clock event ("throttle") reason bits, grouped by cause: the software power cap and the
#: hardware power brake; software and hardware thermal slowdown, and the hardware slowdown that
#: at least halves the clocks (heat, an external power-brake signal or a power surge).
POWER_REASONS = 0x4 | 0x80
THERMAL_REASONS = 0x20 | 0x40 | 0x8


def interval_from_env(environ: dict[str, str] | None = None) -> float | None:
    """The sampling interval in seconds, or ``None`` when the monitor is turned off."""
    raw = (environ if environ is not None else os.environ).get(INTERVAL_ENV, "").strip().lower()
    if not raw:
        return DEFAULT_INTERVAL_S
    if raw in ("0", "off", "no", "false"):
        return None
    try:
        value = float(raw)
    except ValueError:
        from harness.errors import UserInputError

        raise UserInputError(f"{INTERVAL_ENV}={raw!r}: expected seconds (e.g. 0.5) or 'off'") from None
    if value <= 0:
        return None
    return value


@dataclass
class Sample:
    time_s: float
    memory_used: list[int | None]
    utilization: list[int | None]
    power_w: list[float | None]
    #: Per GPU: the SM clock in MHz and NVML's clock event reason bits (``None``: not supported).
    sm_clock_mhz: list[int | None] = field(default_factory=list)
    clock_reasons: list[int | None] = field(default_factory=list)


@dataclass
class MonitorSummary:
    gpus: list[int]
    interval_s: float
    samples: int = 0
    peak_memory_bytes: list[int | None] = field(default_factory=list)
    mean_power_w: list[float | None] = field(default_factory=list)
    mean_utilization_pct: list[float | None] = field(default_factory=list)
    busy_power_w: float | None = None
    busy_s: float = 0.0
    #: Mean utilisation per GPU over the training span, its length, and what bounds it
    #: ("measured steps" or "busy samples").
    training_utilization_pct: list[float | None] = field(default_factory=list)
    training_span_s: float = 0.0
    training_span_source: str | None = None
    #: Over the training span, per GPU: mean SM clock, and the share of samples (0-100) in
    #: which the power cap or a thermal slowdown held the clocks down; the GPU's maximum SM clock.
    training_sm_clock_mhz: list[float | None] = field(default_factory=list)
    training_power_capped_pct: list[float | None] = field(default_factory=list)
    training_thermal_limited_pct: list[float | None] = field(default_factory=list)
    max_sm_clock_mhz: list[int | None] = field(default_factory=list)
    energy_j: float | None = None
    energy_source: str | None = None
    duration_s: float = 0.0

    def as_extras(self, csv_name: str) -> dict[str, Any]:
        known_peaks = [p for p in self.peak_memory_bytes if p is not None]
        extras: dict[str, Any] = {
            "monitor_csv": csv_name,
            "monitor_interval_s": self.interval_s,
            "monitor_samples": self.samples,
            "monitored_gpus": self.gpus,
            "nvml_peak_memory_bytes": self.peak_memory_bytes,
            "nvml_peak_memory_bytes_max": max(known_peaks) if known_peaks else None,
            "mean_power_w": self.mean_power_w,
            "mean_utilization_pct": self.mean_utilization_pct,
            "busy_s": round(self.busy_s, 3),
            "training_utilization_pct": self.training_utilization_pct,
            "training_span_s": round(self.training_span_s, 3),
            "training_span_source": self.training_span_source,
            "training_sm_clock_mhz": self.training_sm_clock_mhz,
            "training_power_capped_pct": self.training_power_capped_pct,
            "training_thermal_limited_pct": self.training_thermal_limited_pct,
            "max_sm_clock_mhz": self.max_sm_clock_mhz,
            "energy_j": self.energy_j,
            "energy_source": self.energy_source,
        }
        if self.busy_power_w is not None:
            extras["busy_power_w"] = self.busy_power_w
        return extras


def _try(call, *args):
    """``call(*args)``, or None where NVML lacks the function (an older nvidia-ml-py) or the
    device does not support the query."""
    if call is None:
        return None
    try:
        return call(*args)
    except Exception:  # NVML raises NVMLError_NotSupported etc. per query and device
        return None


def _share_with(reasons: list[int | None], bits: int) -> float | None:
    """Percent of the readings with any of ``bits`` set; None without readings."""
    known = [r for r in reasons if r is not None]
    return 100.0 * sum(1 for r in known if r & bits) / len(known) if known else None


def _at(values: list, i: int):
    """Reading ``i`` of a sample's per-GPU list; None where the sample has none (older samples
    and tests build samples without clocks)."""
    return values[i] if i < len(values) else None


def _window_samples(samples: list[Sample], window: tuple[float, float], interval_s: float) -> list[Sample]:
    """The samples that describe the window: NVML's utilisation covers a period before the
    reading, so those from one interval after the window opens to its end."""
    start, end = window
    return [s for s in samples if start + interval_s <= s.time_s <= end]


def summarise(samples: list[Sample], gpus: list[int], interval_s: float,
              energy_j: float | None = None, energy_source: str | None = None,
              duration_s: float = 0.0, window: tuple[float, float] | None = None,
              max_sm_clock_mhz: list[int | None] | None = None) -> MonitorSummary:
    """Peak memory, mean power/utilisation per GPU; summed power over the busy samples;
    utilisation, SM clock and clock limits over ``window`` (sample-time seconds of the measured
    steps) where it holds samples, else from the first busy sample to the last."""
    summary = MonitorSummary(gpus=gpus, interval_s=interval_s, samples=len(samples),
                             duration_s=duration_s, max_sm_clock_mhz=list(max_sm_clock_mhz or []))
    for i in range(len(gpus)):
        memory = [s.memory_used[i] for s in samples if s.memory_used[i] is not None]
        power = [s.power_w[i] for s in samples if s.power_w[i] is not None]
        util = [s.utilization[i] for s in samples if s.utilization[i] is not None]
        summary.peak_memory_bytes.append(max(memory) if memory else None)
        summary.mean_power_w.append(statistics.fmean(power) if power else None)
        summary.mean_utilization_pct.append(statistics.fmean(util) if util else None)
    busy_at = [i for i, s in enumerate(samples)
               if s.utilization and all(u is not None and u >= BUSY_UTILIZATION_PCT for u in s.utilization)
               and all(p is not None for p in s.power_w)]
    if busy_at:
        busy = [samples[i] for i in busy_at]
        summary.busy_power_w = statistics.fmean(sum(s.power_w) for s in busy)  # type: ignore[arg-type]
        summary.busy_s = len(busy) * interval_s
    in_window = _window_samples(samples, window, interval_s) if window else []
    if in_window:
        span, summary.training_span_source = in_window, "measured steps"
        summary.training_span_s = window[1] - window[0]  # type: ignore[index]
    elif busy_at:
        span, summary.training_span_source = samples[busy_at[0]:busy_at[-1] + 1], "busy samples"
        summary.training_span_s = len(span) * interval_s
    else:
        span = []
    if span:
        for i in range(len(gpus)):
            util = [s.utilization[i] for s in span if s.utilization[i] is not None]
            summary.training_utilization_pct.append(statistics.fmean(util) if util else None)
            clocks = [c for c in (_at(s.sm_clock_mhz, i) for s in span) if c is not None]
            summary.training_sm_clock_mhz.append(statistics.fmean(clocks) if clocks else None)
            reasons = [_at(s.clock_reasons, i) for s in span]
            summary.training_power_capped_pct.append(_share_with(reasons, POWER_REASONS))
            summary.training_thermal_limited_pct.append(_share_with(reasons, THERMAL_REASONS))
    if energy_j is None and samples and all(p is not None for p in summary.mean_power_w):
        # No energy counter: integrate the sampled power over the sampled time.
        energy_j = sum(p for p in summary.mean_power_w) * duration_s  # type: ignore[misc]
        energy_source = "sampled power x duration"
    summary.energy_j = energy_j
    summary.energy_source = energy_source
    return summary


class GpuMonitor:
    """Background sampler of the GPUs with NVML indices ``gpus``; ``start()``, then ``stop()``."""

    #: How long stop() waits for a sampler thread in the middle of a reading (NVML can stall).
    join_timeout_s = 5.0

    def __init__(self, nvml, gpus: list[int], interval_s: float, csv_path: Path):
        self.nvml = nvml
        self.gpus = gpus
        self.interval_s = interval_s
        self.csv_path = csv_path
        self.samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handles: list[Any] = []
        self._energy_start: list[int | None] = []
        self._max_sm_clock: list[int | None] = []
        self._clock_call = self._reasons_call = None
        self._t0 = 0.0
        self._csv = None
        self._writer = None
        # Recording a sample (the list and the CSV row) and stop()'s closing of the CSV take
        # turns: a sampler thread still reading NVML when stop() gives up waiting for it must
        # neither interleave its rows with the last reading's nor write to the closed file.
        self._record = threading.Lock()
        self._closed = False

    def start(self) -> "GpuMonitor":
        self._handles = [self.nvml.nvmlDeviceGetHandleByIndex(i) for i in self.gpus]
        # Millijoules since the driver loaded (Volta and newer); exact where supported.
        self._energy_start = [_try(self.nvml.nvmlDeviceGetTotalEnergyConsumption, h)
                              for h in self._handles]
        max_clock = getattr(self.nvml, "nvmlDeviceGetMaxClockInfo", None)
        self._max_sm_clock = [_try(max_clock, h, NVML_CLOCK_SM) for h in self._handles]
        self._clock_call = getattr(self.nvml, "nvmlDeviceGetClockInfo", None)
        # nvidia-ml-py renamed "throttle reasons" to "clock event reasons" (driver 535).
        self._reasons_call = (getattr(self.nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
                              or getattr(self.nvml, "nvmlDeviceGetCurrentClocksThrottleReasons", None))
        self.csv_path.parent.mkdir(parents=True, exist_ok=True)
        self._csv = open(self.csv_path, "w", newline="", encoding="utf-8")
        self._writer = csv.writer(self._csv)
        self._writer.writerow(CSV_HEADER)
        self._t0 = time.monotonic()
        self.sample()
        self._thread = threading.Thread(target=self._loop, name="harness-nvml-monitor", daemon=True)
        self._thread.start()
        return self

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.sample()

    def sample(self) -> Sample:
        nvml = self.nvml
        memory, util, power, clock, reasons = [], [], [], [], []
        for handle in self._handles:
            info = _try(nvml.nvmlDeviceGetMemoryInfo, handle)
            rates = _try(nvml.nvmlDeviceGetUtilizationRates, handle)
            mhz = _try(self._clock_call, handle, NVML_CLOCK_SM)
            bits = _try(self._reasons_call, handle)
            milliwatts = _try(nvml.nvmlDeviceGetPowerUsage, handle)
            memory.append(int(info.used) if info is not None else None)
            util.append(int(rates.gpu) if rates is not None else None)
            power.append(milliwatts / 1000.0 if milliwatts is not None else None)
            clock.append(int(mhz) if mhz is not None else None)
            reasons.append(int(bits) if bits is not None else None)
        sample = Sample(time.monotonic() - self._t0, memory, util, power, clock, reasons)
        with self._record:
            if self._closed:  # a late reading of the sampler thread, after stop(): not recorded
                return sample
            self.samples.append(sample)
            if self._writer is not None:
                for gpu, m, u, p, c, r in zip(self.gpus, memory, util, power, clock, reasons):
                    self._writer.writerow([f"{sample.time_s:.3f}", gpu,
                                           "" if m is None else f"{m / 2**20:.0f}",
                                           "" if u is None else u,
                                           "" if p is None else f"{p:.1f}",
                                           "" if c is None else c,
                                           "" if r is None else int(bool(r & POWER_REASONS)),
                                           "" if r is None else int(bool(r & THERMAL_REASONS))])
                self._csv.flush()
        return sample

    def stop(self, window: tuple[float, float] | None = None) -> MonitorSummary:
        """Stops sampling; ``window`` is the measured steps' ``(start, end)`` in
        ``time.monotonic()`` seconds (the core's step clock), or ``None``."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(self.join_timeout_s, 2 * self.interval_s))
        self.sample()  # one last reading at the end of the run
        duration = time.monotonic() - self._t0
        with self._record:
            self._closed = True
            if self._csv is not None:
                self._csv.close()
        energy = source = None
        ends = [_try(self.nvml.nvmlDeviceGetTotalEnergyConsumption, h) for h in self._handles]
        if self._energy_start and all(x is not None for x in self._energy_start + ends):
            energy = sum(e - s for s, e in zip(self._energy_start, ends)) / 1000.0  # type: ignore[operator]
            source = "NVML total energy counter"
        relative = (window[0] - self._t0, window[1] - self._t0) if window else None
        return summarise(self.samples, self.gpus, self.interval_s, energy, source, duration, relative,
                         max_sm_clock_mhz=self._max_sm_clock)
