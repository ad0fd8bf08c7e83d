"""cpu vendor plugin: the host CPU as the device; threads split between processes."""

from __future__ import annotations

import os
from pathlib import Path

from harness import hookimpl
from harness.models import DeviceInfo, DeviceSet, LaunchSpec, VendorSpec
from harness.models.device import DeviceBackend, FrameworkDevice
from harness.models.context import RunContext
from harness.fingerprint import cpu_model
from harness.launch import usable_cores
from harness.vendor_configs import find_vendor_config

VENDOR = "cpu"
CONFIGS = Path(__file__).parent / "configs"
# The host CPU as every framework names it; the processes share it (gloo between them) and
# the peak memory is each process's resident memory. fp16 has no CPU training kernels in
# the built-in frameworks' CPU paths, so only fp32 and bf16.
BACKEND = DeviceBackend(
    device_type="cpu",
    frameworks={
        "torch": FrameworkDevice(device_type="cpu", dist_backend="gloo"),
        "paddle": FrameworkDevice(device_type="cpu", dist_backend="gloo"),
        "mxnet": FrameworkDevice(device_type="cpu", dist_backend="local"),
    },
    addressed_by_local_rank=False,
    precisions=frozenset({"fp32", "bf16"}),
    peak_memory="process_rss",
    launch_env=frozenset({"CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS"}),  # what run() below adds
)


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError):
        return None


@hookimpl
def register_vendors(register) -> None:
    register(VendorSpec(name=VENDOR, description="host CPU (works everywhere)", device_kind="cpu",
                        backend=BACKEND))


@hookimpl
def discover_devices(vendor: str) -> DeviceSet | None:
    return DeviceSet(
        vendor=VENDOR,
        kind="cpu",
        devices=[DeviceInfo(index=0, name=f"{cpu_model() or 'cpu'} ({usable_cores()} cores)",
                            memory_bytes=_memory_bytes())],
    )


@hookimpl
def vendor_case_config(vendor, case, framework, nproc, nnodes, hardware_config):
    return find_vendor_config(CONFIGS, case.name, framework, nnodes, nproc, hardware_config)


@hookimpl(wrapper=True)
def run(context: RunContext, env, dataset):
    launch: LaunchSpec | None = yield
    if launch is None:
        return launch
    # Hide GPUs so a CPU benchmark stays on the CPU even on a GPU machine, and give each
    # process its share of the cores instead of letting every process oversubscribe them.
    threads = max(1, usable_cores() // context.config.settings.nproc)
    extra = {"CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": str(threads)}
    return launch.model_copy(update={"env": {**extra, **launch.env}})


@hookimpl
def unsupported_reason(context: RunContext) -> str | None:
    """More processes than usable cores: each would get a slice of a core (and its own copy of
    the model in memory), so the run would measure oversubscription, if it did not exhaust
    the machine's memory first."""
    nproc, cores = context.config.settings.nproc, usable_cores()
    if nproc > cores:
        return (f"--nproc {nproc} needs {nproc} CPU cores per node (one per process); this "
                f"machine lets this process use {cores}")
    return None
