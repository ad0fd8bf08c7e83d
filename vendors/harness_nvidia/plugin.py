"""nvidia vendor plugin: NVML discovery, visible-devices handling, per-case configs."""

from __future__ import annotations

from pathlib import Path

from harness import hookimpl
from harness.models import DeviceSet, LaunchSpec, VendorSpec
from harness.models.context import RunContext
from harness.vendor_configs import find_vendor_config

VENDOR = "nvidia"
CONFIGS = Path(__file__).parent / "configs"


@hookimpl
def register_vendors(register) -> None:
    register(VendorSpec(name=VENDOR, description="NVIDIA GPUs through NVML", device_kind="gpu"))


@hookimpl
def discover_devices(vendor: str) -> DeviceSet | None:
    if vendor != VENDOR:
        return None
    from harness_nvidia.nvml_devices import discover, load_nvml

    nvml = load_nvml()
    try:
        return discover(nvml)
    finally:
        nvml.nvmlShutdown()


@hookimpl
def vendor_case_config(vendor, case, framework, nproc, nnodes, hardware_config):
    if vendor != VENDOR:
        return None
    return find_vendor_config(CONFIGS, case.name, framework, nnodes, nproc, hardware_config)


@hookimpl(wrapper=True)
def run(context: RunContext, env, dataset):
    launch: LaunchSpec | None = yield
    if launch is None or context.vendor != VENDOR:
        return launch
    import os

    extra = {}
    if "CUDA_VISIBLE_DEVICES" not in os.environ and "CUDA_VISIBLE_DEVICES" not in launch.env:
        extra["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in range(context.config.settings.nproc))
    return launch.model_copy(update={"env": {**launch.env, **extra}})
