"""Device discovery through NVML (the nvidia-ml-py package, imported as pynvml)."""

from __future__ import annotations

import importlib
import os

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


VISIBLE_ENV = "CUDA_VISIBLE_DEVICES"


def visible_selection(all_devices: list[DeviceInfo], raw: str | None) -> list[DeviceInfo]:
    """The devices ``CUDA_VISIBLE_DEVICES`` selects, in its order (NVML indices kept).

    Entries are indices or (prefixes of) UUIDs such as ``GPU-8a1f...``; like CUDA, the list
    ends at the first entry that matches no device. Unset means all devices; empty, none.
    """
    if raw is None:
        return list(all_devices)
    chosen: list[DeviceInfo] = []
    for entry in (e.strip() for e in raw.split(",")):
        if not entry:
            break
        if entry.isdigit():
            match = next((d for d in all_devices if d.index == int(entry)), None)
        else:
            match = next((d for d in all_devices if d.uuid and d.uuid.startswith(entry)), None)
        if match is None or match in chosen:
            break
        chosen.append(match)
    return chosen


def discover(nvml, environ: dict[str, str] | None = None) -> DeviceSet:
    """The GPUs this process may use: all NVML devices, narrowed by CUDA_VISIBLE_DEVICES."""
    environ = os.environ if environ is None else environ
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
            compute_capability=_compute_capability(nvml, handle),
        ))
    raw_visible = environ.get(VISIBLE_ENV)
    devices = visible_selection(devices, raw_visible)
    if not devices:
        raise UnavailableError(
            f"{VISIBLE_ENV}={raw_visible!r} selects none of the {count} NVIDIA GPUs of this "
            f"machine; unset it or name GPU indices 0-{count - 1}."
        )
    cuda = nvml.nvmlSystemGetCudaDriverVersion()
    return DeviceSet(
        vendor="nvidia",
        kind="gpu",
        devices=devices,
        driver_version=_text(nvml.nvmlSystemGetDriverVersion()),
        runtime_version=f"{cuda // 1000}.{(cuda % 1000) // 10}",
        interconnect=_interconnect(nvml, [d.index for d in devices]),
        visible_devices_env="CUDA_VISIBLE_DEVICES",
    )


def _compute_capability(nvml, handle) -> str | None:
    """The CUDA compute capability as "major.minor"; ``None`` where NVML cannot tell (an old
    driver or pynvml), so precision support falls back to the device's name."""
    try:
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        return f"{int(major)}.{int(minor)}"
    except Exception:
        return None


def _interconnect(nvml, indices: list[int]) -> str | None:
    """NVLink with its active link count if the first GPU has active NVLinks, else PCIe.

    ``None`` for a single GPU (nothing to connect) or when NVML cannot tell.
    """
    if len(indices) < 2:
        return None
    try:
        handle = nvml.nvmlDeviceGetHandleByIndex(indices[0])
        active = 0
        for link in range(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18)):
            try:
                if nvml.nvmlDeviceGetNvLinkState(handle, link) == nvml.NVML_FEATURE_ENABLED:
                    active += 1
            except Exception:  # links past the device's last one raise
                break
        return f"NVLink ({active} active links on GPU {indices[0]})" if active else "PCIe"
    except Exception:
        return None
