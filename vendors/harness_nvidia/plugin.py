"""nvidia vendor plugin: NVML discovery, visible devices, GPU monitor, peak FLOPs, per-case configs."""

from __future__ import annotations

import logging
from pathlib import Path

from harness import hookimpl
from harness.models import DeviceSet, LaunchSpec, VendorSpec
from harness.models.device import DeviceBackend, FrameworkDevice
from harness.models.context import RunContext
from harness.vendor_configs import find_vendor_config

VENDOR = "nvidia"
CONFIGS = Path(__file__).parent / "configs"
# NVML numbers GPUs by PCI bus; CUDA's default order may differ. The launch uses NVML's
# order so that the monitor samples the GPUs the processes really use.
LAUNCH_ENV = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
# Multi-GPU hosts here share their GPUs with others: never let NCCL or PyTorch use NVLink
# multicast (NVLS), which can take a shared host's GPUs out of service. A user who sets these
# variables in the environment keeps their value.
SAFE_DEFAULTS = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}

# CUDA devices as each framework names them: one GPU per process (by local rank among
# CUDA_VISIBLE_DEVICES), NCCL between them (MXNet: the GPU-side 'device' kvstore), the CUDA
# caching allocator's peak, and TF32 for fp32 matmuls as NVIDIA's own benchmarks use it.
BACKEND = DeviceBackend(
    device_type="cuda",
    frameworks={
        "torch": FrameworkDevice(device_type="cuda", dist_backend="nccl"),
        "paddle": FrameworkDevice(device_type="gpu", dist_backend="nccl"),
        "mxnet": FrameworkDevice(device_type="gpu", dist_backend="device"),
    },
    addressed_by_local_rank=True,
    visible_devices_env="CUDA_VISIBLE_DEVICES",
    precisions=frozenset({"fp32", "fp16", "bf16", "fp8"}),  # bf16: Ampere+, fp8: Ada/Hopper+ (unsupported_reason)
    peak_memory="allocator",
    float32_matmul_precision="high",
    # What the run wrapper below adds to a built-in script's launch.
    launch_env=frozenset({*LAUNCH_ENV, *SAFE_DEFAULTS, "OMP_NUM_THREADS"}),
)

log = logging.getLogger(__name__)


@hookimpl
def register_vendors(register) -> None:
    register(VendorSpec(name=VENDOR, description="NVIDIA GPUs through NVML", device_kind="gpu",
                        backend=BACKEND))


@hookimpl
def discover_devices(vendor: str) -> DeviceSet | None:
    from harness_nvidia.nvml_devices import discover, load_nvml

    nvml = load_nvml()
    try:
        return discover(nvml)
    finally:
        nvml.nvmlShutdown()


@hookimpl
def vendor_case_config(vendor, case, framework, nproc, nnodes, hardware_config):
    return find_vendor_config(CONFIGS, case.name, framework, nnodes, nproc, hardware_config)


@hookimpl
def device_peak_flops(devices: DeviceSet, precision: str) -> float | None:
    if not devices.devices:
        return None
    from harness_nvidia.peak_flops import peak_flops

    names = {d.name for d in devices.devices}
    if len(names) > 1:
        return None  # mixed GPUs: no single peak per device to divide by
    return peak_flops(names.pop(), precision)


def used_gpu_indices(context: RunContext) -> list[int]:
    """NVML indices of the GPUs the run uses: the first ``nproc`` visible ones."""
    nproc = context.config.settings.nproc
    return [d.index for d in context.devices.devices[:nproc]]


@hookimpl(wrapper=True)
def run(context: RunContext, env, dataset):
    from harness_nvidia.monitor import interval_from_env

    # A malformed monitor interval is bad input: refused here, before the launch, not by the
    # execute wrapper once the run counts as launched (a failed result, exit 1).
    interval_from_env()
    launch: LaunchSpec | None = yield
    if launch is None:
        return launch
    import os

    extra = {key: os.environ.get(key, value) for key, value in SAFE_DEFAULTS.items()}
    extra.update(LAUNCH_ENV)
    extra["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in used_gpu_indices(context))
    extra["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS") or str(host_threads_per_process(context))
    return launch.model_copy(update={"env": {**launch.env, **extra}})


def host_threads_per_process(context: RunContext) -> int:
    """This node's cores shared among its GPU processes. torchrun would otherwise set
    OMP_NUM_THREADS=1 for several processes a node, and the host work of a rank (the offloaded
    optimizer's CPU AdamW above all) would run on one core."""
    from harness.launch import usable_cores

    return max(1, usable_cores() // max(1, context.config.settings.nproc))


@hookimpl(wrapper=True)
def execute(context: RunContext, launch: LaunchSpec, log_path: Path, observer):
    """Samples the run's GPUs while the processes run; adds the summary to outcome.extras."""
    from harness_nvidia.monitor import interval_from_env

    interval = interval_from_env()
    monitor = _start_monitor(context, interval) if interval else None
    try:
        outcome = yield
    finally:
        summary = csv_name = None
        if monitor is not None:
            gpu_monitor, nvml, csv_name = monitor
            window = getattr(observer, "measured_window", None)  # the core's step clock
            measured = window(context.config.settings.skip_steps) if window else None
            try:
                summary = gpu_monitor.stop(measured)
            finally:
                nvml.nvmlShutdown()
    if summary is not None and outcome is not None:
        outcome.extras.update(summary.as_extras(csv_name))
    return outcome


def _start_monitor(context: RunContext, interval: float):
    from harness.errors import UnavailableError
    from harness_nvidia.monitor import GpuMonitor
    from harness_nvidia.nvml_devices import load_nvml

    try:
        nvml = load_nvml()
    except UnavailableError as exc:  # discovery worked moments ago; measure nothing rather than fail
        log.warning("GPU monitor off: %s", exc)
        return None
    name = "monitor.csv" if context.repeat_index == 1 else f"monitor.r{context.repeat_index}.csv"
    try:
        monitor = GpuMonitor(nvml, used_gpu_indices(context), interval, context.run_dir / name).start()
    except Exception as exc:
        log.warning("GPU monitor off: %s", exc)
        nvml.nvmlShutdown()
        return None
    return monitor, nvml, name


@hookimpl
def unsupported_reason(context: RunContext) -> str | None:
    """Precisions the run's GPUs have no arithmetic for: fp8 before Ada/Hopper (compute
    capability 8.9), bf16 before Ampere (8.0); by capability where NVML gave it, else by name."""
    precision = context.config.settings.precision
    if precision not in ("fp8", "bf16"):
        return None
    from harness_nvidia.peak_flops import MIN_CAPABILITY, parse_capability, supports_bf16, supports_fp8

    used = context.devices.devices[: context.config.settings.nproc]
    gpus = sorted({(d.name, d.compute_capability) for d in used}, key=lambda g: (g[0], g[1] or ""))
    supports = supports_fp8 if precision == "fp8" else supports_bf16
    # A refusal names the compute capability where that decided, else the name alone decided.
    # bf16: None is "not known", not refused; fp8 refuses a GPU it cannot place.
    lacking = [f"{name} (compute capability {cc})" if parse_capability(cc) else name
               for name, cc in gpus if supports(name, cc) is False]
    if not lacking:
        return None
    needed = "{}.{}".format(*MIN_CAPABILITY[precision])
    if precision == "fp8":
        return (f"fp8 training needs fp8 tensor cores (compute capability {needed}: Ada, Hopper or "
                f"newer); {', '.join(lacking)} has none: use --precision bf16")
    return (f"bf16 training needs an Ampere or newer GPU (compute capability {needed}); "
            f"{', '.join(lacking)} has no bf16: use --precision fp16 or fp32")
