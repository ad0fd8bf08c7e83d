"""The GPU monitor: sampling a fake NVML, monitor.csv, the summary arithmetic, the execute wrapper."""

from __future__ import annotations

import csv
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from harness import hookimpl
from harness.errors import UserInputError
from harness.models import DeviceInfo, DeviceSet, LaunchSpec, ProcessOutcome
from harness_nvidia.monitor import (CSV_HEADER, GpuMonitor, Sample, interval_from_env,
                                    summarise)

from .fake_nvml import FakeGpu, make_fake_nvml


def test_interval_from_env():
    assert interval_from_env({}) == 1.0
    assert interval_from_env({"HARNESS_NVIDIA_MONITOR_INTERVAL_S": "0.25"}) == 0.25
    assert interval_from_env({"HARNESS_NVIDIA_MONITOR_INTERVAL_S": "off"}) is None
    assert interval_from_env({"HARNESS_NVIDIA_MONITOR_INTERVAL_S": "0"}) is None
    with pytest.raises(UserInputError, match="expected seconds"):
        interval_from_env({"HARNESS_NVIDIA_MONITOR_INTERVAL_S": "fast"})


def test_summary_arithmetic_by_hand():
    # Two GPUs, four samples at 1 s: the first (start-up, idle) is not busy.
    samples = [
        Sample(0.0, [1000, 2000], [0, 0], [100.0, 110.0]),
        Sample(1.0, [5000, 6000], [90, 95], [600.0, 620.0]),
        Sample(2.0, [7000, 4000], [100, 100], [700.0, 680.0]),
        Sample(3.0, [6000, 6500], [100, 40], [650.0, 300.0]),  # GPU 1 under 50 %: not busy
    ]
    s = summarise(samples, gpus=[0, 1], interval_s=1.0, duration_s=3.0)
    assert s.peak_memory_bytes == [7000, 6500]
    assert s.mean_power_w == [pytest.approx(512.5), pytest.approx(427.5)]
    assert s.mean_utilization_pct == [pytest.approx(72.5), pytest.approx(58.75)]
    # Busy samples 2 and 3: (600 + 620 + 700 + 680) / 2 = 1300 W for both GPUs together.
    assert s.busy_power_w == pytest.approx(1300.0) and s.busy_s == 2.0
    # No energy counter: sampled mean power x duration = (512.5 + 427.5) x 3 s.
    assert s.energy_j == pytest.approx(2820.0)
    assert s.energy_source == "sampled power x duration"


def test_training_utilisation_counts_dips_between_busy_samples_but_not_start_up():
    # Idle start-up, busy, a starved second (the data pipeline), busy again, idle teardown.
    utilisation = [0, 3, 98, 97, 20, 99, 96, 5]
    samples = [Sample(float(t), [1], [u], [100.0]) for t, u in enumerate(utilisation)]
    s = summarise(samples, gpus=[0], interval_s=0.5)
    assert s.training_utilization_pct == [pytest.approx((98 + 97 + 20 + 99 + 96) / 5)]
    assert s.training_span_s == 2.5 and s.busy_s == 2.0
    assert s.as_extras("monitor.csv")["training_utilization_pct"] == s.training_utilization_pct


def test_training_utilisation_over_the_measured_steps_ignores_a_busy_blip_in_compilation():
    # An autotuning blip at 2 s during compilation, then training (the measured steps' window
    # opens at 6.0 s with the last skipped step's line and closes at 9.1 s).
    utilisation = [0, 0, 63, 0, 0, 0, 40, 90, 80, 85, 30, 0]
    samples = [Sample(float(t), [1], [u], [100.0]) for t, u in enumerate(utilisation)]
    by_busy = summarise(samples, gpus=[0], interval_s=1.0)
    assert by_busy.training_span_source == "busy samples" and by_busy.training_span_s == 8.0
    s = summarise(samples, gpus=[0], interval_s=1.0, window=(6.0, 9.1))
    assert s.training_utilization_pct == [pytest.approx((90 + 80 + 85) / 3)]  # samples at 7, 8, 9 s
    assert s.training_span_s == pytest.approx(3.1) and s.training_span_source == "measured steps"
    # a sample is in when the whole interval before it is: the one at 7 s is not for (6.2, 9.1)
    assert summarise(samples, gpus=[0], interval_s=1.0, window=(6.2, 9.1)).training_utilization_pct == [
        pytest.approx((80 + 85) / 2)]
    assert s.as_extras("monitor.csv")["training_span_source"] == "measured steps"
    # a window too short to hold a sample falls back to the busy samples
    assert summarise(samples, gpus=[0], interval_s=1.0, window=(7.1, 7.5)).training_span_source == "busy samples"


def test_summary_without_busy_samples_has_no_busy_power():
    s = summarise([Sample(0.0, [1], [10], [80.0])], gpus=[0], interval_s=1.0)
    assert s.busy_power_w is None and "busy_power_w" not in s.as_extras("monitor.csv")
    assert s.training_utilization_pct == [] and s.training_span_s == 0.0


def wait_for_samples(monitor: GpuMonitor, count: int, limit_s: float = 30.0) -> GpuMonitor:
    """Until the sampler thread has taken ``count`` samples (polled, not a fixed sleep, so a
    loaded machine only makes it slower); fails after ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while len(monitor.samples) < count:
        assert time.monotonic() < deadline, f"{len(monitor.samples)} samples after {limit_s} s"
        time.sleep(0.01)
    return monitor


def test_monitor_samples_fake_nvml_and_writes_csv(tmp_path):
    gpus = [FakeGpu(used=[1 << 30, 3 << 30, 2 << 30], util=[0, 100, 100],
                    power_mw=[100_000, 600_000, 650_000], energy_mj=[1_000_000, 1_900_000])]
    nvml = make_fake_nvml(gpus)
    monitor = wait_for_samples(GpuMonitor(nvml, [0], 0.01, tmp_path / "monitor.csv").start(), 3)
    summary = monitor.stop()
    rows = list(csv.reader(open(tmp_path / "monitor.csv", encoding="utf-8")))
    assert rows[0] == CSV_HEADER
    assert len(rows) - 1 == summary.samples >= 3
    assert rows[1][1:] == ["0", "1024", "0", "100.0", "1980", "0", "0"]
    assert summary.peak_memory_bytes == [3 << 30]
    # Exact energy from NVML's counter: (1,900,000 - 1,000,000) mJ.
    assert summary.energy_j == pytest.approx(900.0)
    assert summary.energy_source == "NVML total energy counter"
    assert summary.busy_power_w == pytest.approx(650.0, rel=0.1)


def test_clocks_and_their_limits_over_the_training_span_by_hand():
    # One GPU at 1 s: idle start-up at full clock, then training (window 1.0-4.0 s: the samples
    # at 2, 3 and 4 s) with the power cap on twice and a thermal slowdown once.
    samples = [Sample(0.0, [1], [0], [90.0], [1980], [0x1]),          # idle: not in the window
               Sample(1.0, [1], [99], [690.0], [1830], [0x0]),        # one interval after opening: out
               Sample(2.0, [1], [99], [700.0], [1755], [0x4]),        # software power cap
               Sample(3.0, [1], [99], [700.0], [1740], [0x4 | 0x40]),  # power cap and HW thermal
               Sample(4.0, [1], [99], [660.0], [1800], [0x0])]
    s = summarise(samples, gpus=[0], interval_s=1.0, window=(1.0, 4.0), max_sm_clock_mhz=[1980])
    assert s.training_sm_clock_mhz == [pytest.approx((1755 + 1740 + 1800) / 3)]
    assert s.training_power_capped_pct == [pytest.approx(200 / 3)]
    assert s.training_thermal_limited_pct == [pytest.approx(100 / 3)]
    extras = s.as_extras("monitor.csv")
    assert extras["max_sm_clock_mhz"] == [1980]
    assert extras["training_power_capped_pct"] == s.training_power_capped_pct
    # Samples without clock readings (an NVML without the queries) give None, not an error.
    bare = [Sample(float(t), [1], [99], [600.0]) for t in range(5)]
    b = summarise(bare, gpus=[0], interval_s=1.0, window=(1.0, 4.0))
    assert b.training_sm_clock_mhz == [None] and b.training_power_capped_pct == [None]
    assert b.max_sm_clock_mhz == []


def test_monitor_records_clocks_and_limit_flags_in_the_csv(tmp_path):
    gpu = FakeGpu(util=[0, 100, 100], sm_clock_mhz=[1980, 1755, 1700],
                  clock_reasons=[0x1, 0x4, 0x4 | 0x20], max_sm_clock_mhz=1980)
    monitor = wait_for_samples(GpuMonitor(make_fake_nvml([gpu]), [0], 0.01, tmp_path / "monitor.csv").start(), 3)
    summary = monitor.stop()
    rows = list(csv.DictReader(open(tmp_path / "monitor.csv", encoding="utf-8")))
    assert [(r["sm_clock_mhz"], r["power_capped"], r["thermal_limited"]) for r in rows[:3]] == [
        ("1980", "0", "0"), ("1755", "1", "0"), ("1700", "1", "1")]
    # No step window: the span runs from the first busy sample (utilisation 100) to the last.
    busy = [i for i, r in enumerate(rows) if int(r["utilization_pct"]) >= 50]
    span = rows[busy[0]:busy[-1] + 1]
    assert summary.training_sm_clock_mhz == [pytest.approx(sum(int(r["sm_clock_mhz"]) for r in span) / len(span))]
    assert span[0]["sm_clock_mhz"] == "1755" and {r["sm_clock_mhz"] for r in span[1:]} == {"1700"}
    assert summary.training_power_capped_pct == [pytest.approx(100.0)]
    assert summary.max_sm_clock_mhz == [1980]


def test_monitor_without_clock_queries_leaves_their_columns_empty(tmp_path):
    nvml = make_fake_nvml([FakeGpu(clock_reasons=None)])  # reasons "Not Supported"
    del nvml.nvmlDeviceGetClockInfo, nvml.nvmlDeviceGetMaxClockInfo  # an older nvidia-ml-py
    monitor = GpuMonitor(nvml, [0], 0.01, tmp_path / "monitor.csv").start()
    summary = monitor.stop()
    rows = list(csv.DictReader(open(tmp_path / "monitor.csv", encoding="utf-8")))
    assert {(r["sm_clock_mhz"], r["power_capped"], r["thermal_limited"]) for r in rows} == {("", "", "")}
    assert summary.max_sm_clock_mhz == [None]
    assert summary.as_extras("monitor.csv")["training_power_capped_pct"] == [None]


class InnerExecute:
    """Stands in for the core's execute: 'runs' for a moment and returns an outcome."""

    @hookimpl
    def execute(self, context, launch, log_path, observer):
        time.sleep(0.05)
        now = datetime.now(timezone.utc)
        return ProcessOutcome(status="success", exit_code=0, log_path=str(log_path),
                              started_at=now, finished_at=now)


def nvidia_context(tmp_path, nproc=2):
    from harness.app import Harness
    from harness.plugin_manager import DEFAULT_PLUGINS
    from harness.runner.pipeline import RunRequest, plan

    # Without the core's own execute: InnerExecute stands in for the process launch.
    harness = Harness.load(
        builtins=tuple(name for name in DEFAULT_PLUGINS if name != "harness.builtin.core_plugin"),
        load_entrypoints=False, extra=(InnerExecute(),))
    context = plan(harness,
                   RunRequest(case="gpt3_1.3B", vendor="nvidia", nproc=nproc, output=tmp_path))
    return harness, context


def test_execute_wrapper_adds_monitor_summary(monkeypatch, tmp_path):
    fake = make_fake_nvml([FakeGpu(uuid=f"GPU-{i}", energy_mj=[0, 50_000]) for i in range(4)])
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,1,2")
    monkeypatch.setenv("HARNESS_NVIDIA_MONITOR_INTERVAL_S", "0.01")
    harness, context = nvidia_context(tmp_path, nproc=2)
    assert [d.index for d in context.devices.devices] == [3, 1, 2]
    launch = LaunchSpec(argv=["true"], log_format="megatron")
    outcome = harness.hook.execute(context=context, launch=launch, log_path=tmp_path / "train.log",
                              observer=None)
    extras = outcome.extras
    assert extras["monitored_gpus"] == [3, 1]  # the first nproc visible GPUs
    assert extras["monitor_csv"] == "monitor.csv"
    assert (context.run_dir / "monitor.csv").exists()
    assert extras["busy_power_w"] == pytest.approx(1000.0)  # 2 GPUs x 500 W at 100 %
    assert extras["energy_j"] == pytest.approx(100.0)       # 2 x 50,000 mJ
    assert extras["nvml_peak_memory_bytes"] == [1 << 30, 1 << 30]


def test_monitor_off_leaves_outcome_alone(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", make_fake_nvml([FakeGpu() for _ in range(2)]))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("HARNESS_NVIDIA_MONITOR_INTERVAL_S", "off")
    harness, context = nvidia_context(tmp_path)
    outcome = harness.hook.execute(context=context, launch=LaunchSpec(argv=["true"], log_format="megatron"),
                              log_path=tmp_path / "train.log", observer=None)
    assert outcome.extras == {}


def test_launch_gets_visible_devices_and_nvls_off(monkeypatch, tmp_path):
    from harness_nvidia import plugin

    monkeypatch.setitem(sys.modules, "pynvml", make_fake_nvml([FakeGpu(uuid=f"GPU-{i}") for i in range(4)]))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "2,3,0")
    monkeypatch.delenv("NCCL_NVLS_ENABLE", raising=False)
    harness, context = nvidia_context(tmp_path, nproc=2)
    assert plugin.used_gpu_indices(context) == [2, 3]
    gen = plugin.run(context=context, env=None, dataset=None)
    next(gen)
    with pytest.raises(StopIteration) as stop:
        gen.send(LaunchSpec(argv=["x"], log_format="megatron"))
    env = stop.value.value.env
    assert env["CUDA_VISIBLE_DEVICES"] == "2,3"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["NCCL_NVLS_ENABLE"] == "0"


@pytest.mark.parametrize("user_threads", [None, "3"])
def test_launch_shares_the_host_cores_among_the_gpu_processes(monkeypatch, tmp_path, user_threads):
    """torchrun gives each of several processes OMP_NUM_THREADS=1 unless it is set: the
    offloaded optimizer's host AdamW would then run on one core."""
    import os

    from harness_nvidia import plugin

    monkeypatch.setitem(sys.modules, "pynvml", make_fake_nvml([FakeGpu(uuid=f"GPU-{i}") for i in range(2)]))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    if user_threads is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", user_threads)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(32)))
    _, context = nvidia_context(tmp_path, nproc=2)
    gen = plugin.run(context=context, env=None, dataset=None)
    next(gen)
    with pytest.raises(StopIteration) as stop:
        gen.send(LaunchSpec(argv=["x"], log_format="megatron"))
    assert stop.value.value.env["OMP_NUM_THREADS"] == (user_threads or "16")


def test_nproc_defaults_to_every_visible_gpu(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", make_fake_nvml([FakeGpu(uuid=f"GPU-{i}") for i in range(4)]))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1,2")
    from harness.app import Harness
    from harness.runner.pipeline import RunRequest, plan

    harness = Harness.load(load_entrypoints=False)
    context = plan(harness, RunRequest(case="gpt3_1.3B", vendor="nvidia",
                                                             output=tmp_path))
    assert context.config.settings.nproc == 3
    # The nvidia per-case config applies: bf16, compiled.
    assert context.config.settings.precision == "bf16"
    assert context.config.params["compile"] is True


def test_a_malformed_interval_is_refused_before_the_launch(monkeypatch, tmp_path):
    """The run wrapper refuses it (exit 2, nothing launched); found first by the execute
    wrapper, it failed a run that counted as launched."""
    from harness.errors import UserInputError
    from harness_nvidia import plugin

    monkeypatch.setitem(sys.modules, "pynvml", make_fake_nvml([FakeGpu(uuid="GPU-0")]))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("HARNESS_NVIDIA_MONITOR_INTERVAL_S", "fast")
    _, context = nvidia_context(tmp_path, nproc=1)
    with pytest.raises(UserInputError, match="HARNESS_NVIDIA_MONITOR_INTERVAL_S='fast'"):
        next(plugin.run(context=context, env=None, dataset=None))


def test_stop_while_the_sampler_thread_is_mid_reading_keeps_the_csv_whole(tmp_path, monkeypatch):
    """NVML stalls in the sampler thread; stop() gives up waiting, takes its last reading and
    closes the CSV. The stalled reading, when it returns, must not write to the closed file,
    split the last rows or change the samples summarised."""
    import threading

    nvml = make_fake_nvml([FakeGpu()])
    started, release = threading.Event(), threading.Event()
    power = nvml.nvmlDeviceGetPowerUsage

    def stalling_power(gpu):
        if threading.current_thread().name == "harness-nvml-monitor":
            started.set()
            release.wait(10)
        return power(gpu)

    nvml.nvmlDeviceGetPowerUsage = stalling_power
    errors = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(args.exc_value))
    monkeypatch.setattr(GpuMonitor, "join_timeout_s", 0.05)
    path = tmp_path / "monitor.csv"
    monitor = GpuMonitor(nvml, [0], 0.01, path).start()
    assert started.wait(5)
    monitor.stop()
    recorded = list(monitor.samples)
    release.set()
    monitor._thread.join(5)
    assert not monitor._thread.is_alive() and errors == []
    assert monitor.samples == recorded == recorded[:2]  # start's reading and stop's last one
    rows = list(csv.reader(path.open()))
    assert rows[0] == CSV_HEADER and len(rows) == 3 and all(len(r) == len(CSV_HEADER) for r in rows)
