"""Device discovery through NVML (the nvidia-ml-py package, imported as pynvml)."""

from __future__ import annotations

import importlib

from harness.errors import UnavailableError
from harness.models import DeviceInfo, DeviceSet

SUGGESTION = ("Run on a machine with NVIDIA GPUs and their driver, or use --vendor cpu "
              "for a CPU run.")


def load_nvml(module_name: str = "pynvml"):
    """Import and initialise NVML; UnavailableError with one line if that fails."""
    try:
        nvml = importlib.import_module(module_name)
    except ImportError:
        raise UnavailableError(
            f"vendor nvidia needs the nvidia-ml-py package (pynvml), which is not installed. "
            f"{SUGGESTION}"
        ) from None
    try:
        nvml.nvmlInit()
    except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
        raise UnavailableError(
            f"no NVIDIA driver or GPU found on this machine (NVML: {exc}). {SUGGESTION}"
        ) from None
    return nvml


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def discover(nvml) -> DeviceSet:
    count = nvml.nvmlDeviceGetCount()
    if count == 0:
        raise UnavailableError(f"NVML reports no NVIDIA GPUs on this machine. {SUGGESTION}")
    devices = []
    for index in range(count):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        memory = nvml.nvmlDeviceGetMemoryInfo(handle)
        devices.append(DeviceInfo(
            index=index,
            name=_text(nvml.nvmlDeviceGetName(handle)),
            memory_bytes=int(memory.total),
            uuid=_text(nvml.nvmlDeviceGetUUID(handle)),
        ))
    cuda = nvml.nvmlSystemGetCudaDriverVersion()
    return DeviceSet(
        vendor="nvidia",
        kind="gpu",
        devices=devices,
        driver_version=_text(nvml.nvmlSystemGetDriverVersion()),
        runtime_version=f"{cuda // 1000}.{(cuda % 1000) // 10}",
        interconnect=_interconnect(nvml, count),
        visible_devices_env="CUDA_VISIBLE_DEVICES",
    )


def _interconnect(nvml, count: int) -> str | None:
    """NVLink if GPU 0 has an active NVLink, PCIe otherwise; None when NVML cannot tell."""
    if count < 2:
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(0)
        active = 0
        for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)):
            try:
                if nvml.nvmlDeviceGetNvLinkState(handle, link) == nvml.NVML_FEATURE_ENABLED:
                    active += 1
            except Exception:
                break
        return f"NVLink ({active} links on GPU 0)" if active else "PCIe"
    except Exception:
        return None
