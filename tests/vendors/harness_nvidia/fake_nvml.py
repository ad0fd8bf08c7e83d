"""A stand-in for the pynvml module, injected in tests only: a scriptable set of GPUs."""

from __future__ import annotations

import types
from dataclasses import dataclass, field


class NVMLError(Exception):
    pass


@dataclass
class FakeGpu:
    name: str = "NVIDIA H200"
    total: int = 150_000_000_000
    uuid: str = "GPU-00000000"
    used: list[int] = field(default_factory=lambda: [1 << 30])  # successive readings
    util: list[int] = field(default_factory=lambda: [100])
    power_mw: list[int] = field(default_factory=lambda: [500_000])
    energy_mj: list[int] | None = None  # successive total-energy readings; None: not supported
    sm_clock_mhz: list[int] = field(default_factory=lambda: [1980])
    max_sm_clock_mhz: int = 1980
    clock_reasons: list[int] | None = field(default_factory=lambda: [0])  # None: not supported
    nvlinks: int = 0
    capability: tuple[int, int] | None = (9, 0)  # None: the NVML call raises (old driver)
    reads: int = 0

    def next(self, values):
        return values[min(self.reads, len(values) - 1)]


def make_fake_nvml(gpus: list[FakeGpu], *, driver: str = "580.159.04", cuda: int = 13000,
                   init_error: str | None = None) -> types.ModuleType:
    """A module object with the NVML functions the nvidia vendor calls."""
    nvml = types.ModuleType("pynvml")
    nvml.NVML_FEATURE_ENABLED = 1
    nvml.NVML_NVLINK_MAX_LINKS = 18
    nvml.NVMLError = NVMLError
    nvml.shutdowns = 0

    def init():
        if init_error:
            raise NVMLError(init_error)

    def shutdown():
        nvml.shutdowns += 1

    def handle(index):
        return gpus[index]

    def memory(gpu):
        value = gpu.next(gpu.used)
        return types.SimpleNamespace(total=gpu.total, used=value, free=gpu.total - value)

    def utilization(gpu):
        return types.SimpleNamespace(gpu=gpu.next(gpu.util), memory=0)

    def power(gpu):
        value = gpu.next(gpu.power_mw)
        gpu.reads += 1  # power is read last in a sample: the next sample reads the next values
        return value

    def clock(gpu, kind):
        assert kind == 1  # NVML_CLOCK_SM
        return gpu.next(gpu.sm_clock_mhz)

    def max_clock(gpu, kind):
        assert kind == 1
        return gpu.max_sm_clock_mhz

    def clock_reasons(gpu):
        if gpu.clock_reasons is None:
            raise NVMLError("Not Supported")
        return gpu.next(gpu.clock_reasons)

    def energy(gpu):
        if gpu.energy_mj is None:
            raise NVMLError("Not Supported")
        value = gpu.energy_mj[0]
        if len(gpu.energy_mj) > 1:
            gpu.energy_mj.pop(0)
        return value

    def compute_capability(gpu):
        if gpu.capability is None:
            raise NVMLError("Function Not Found")
        return gpu.capability

    def nvlink_state(gpu, link):
        if link >= 18:
            raise NVMLError("Invalid Argument")
        return 1 if link < gpu.nvlinks else 0

    nvml.nvmlInit = init
    nvml.nvmlShutdown = shutdown
    nvml.nvmlDeviceGetCount = lambda: len(gpus)
    nvml.nvmlDeviceGetHandleByIndex = handle
    nvml.nvmlDeviceGetName = lambda gpu: gpu.name
    nvml.nvmlDeviceGetUUID = lambda gpu: gpu.uuid
    nvml.nvmlDeviceGetMemoryInfo = memory
    nvml.nvmlDeviceGetUtilizationRates = utilization
    nvml.nvmlDeviceGetPowerUsage = power
    nvml.nvmlDeviceGetTotalEnergyConsumption = energy
    nvml.nvmlDeviceGetClockInfo = clock
    nvml.nvmlDeviceGetMaxClockInfo = max_clock
    nvml.nvmlDeviceGetCurrentClocksEventReasons = clock_reasons
    nvml.nvmlDeviceGetNvLinkState = nvlink_state
    nvml.nvmlDeviceGetCudaComputeCapability = compute_capability
    nvml.nvmlSystemGetDriverVersion = lambda: driver.encode()  # old pynvml returns bytes
    nvml.nvmlSystemGetCudaDriverVersion = lambda: cuda
    return nvml
