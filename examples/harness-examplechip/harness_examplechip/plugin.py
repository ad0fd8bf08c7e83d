"""The examplechip vendor plugin: every hook a hardware vendor implements.

- ``register_vendors``: the vendor and its **device backend**, which is how the built-in
  frameworks' training scripts reach the chip (device type, modules to import, collective
  backend, precisions, peak-memory source). This "chip" is the host CPU, so torch's device
  type is ``cpu`` with ``gloo`` between processes; a real accelerator declares its own, e.g.
  ``FrameworkDevice(device_type="npu", import_modules=("torch_npu",), dist_backend="hccl")``
  with ``addressed_by_local_rank=True`` and its visible-devices variable.
- ``discover_devices``: the chips of this machine (one per usable core).
- ``vendor_case_config``: per-case tuning files under ``configs/<case>/<framework>/``.
- ``device_peak_flops``: the peak FLOPs table, for MFU.
- ``run`` wrapper: the variables that give each process its chip.
- ``execute`` wrapper: a measurement of its own while the processes run.
"""

from __future__ import annotations

from pathlib import Path

from harness import hookimpl
from harness.models import DeviceInfo, DeviceSet, LaunchSpec, VendorSpec
from harness.models.context import RunContext
from harness.models.device import DeviceBackend, FrameworkDevice
from harness.vendor_configs import find_vendor_config

from harness_examplechip.chip import MODEL, cpu_facts, peak_flops_per_chip, usable_cores
from harness_examplechip.monitor import ProcessTreeMonitor

VENDOR = "examplechip"
CONFIGS = Path(__file__).parent / "configs"

BACKEND = DeviceBackend(
    device_type="examplechip",
    frameworks={
        # The chip is the host CPU: torch addresses it as its `cpu` device type, and the
        # processes all-reduce through gloo. Only torch is declared, so the Paddle and MXNet
        # plugins refuse this vendor with a one-line reason instead of guessing.
        "torch": FrameworkDevice(device_type="cpu", dist_backend="gloo"),
    },
    # torch's cpu device has no index: each process gets its chip (core) through its thread
    # count (the run wrapper below), not through torch.device("cpu", LOCAL_RANK).
    addressed_by_local_rank=False,
    precisions=frozenset({"fp32", "bf16"}),
    peak_memory="process_rss",
    # What the run wrapper below adds to a built-in script's launch; a wrapper changing
    # anything else in it makes the run invalid.
    launch_env=frozenset({"OMP_NUM_THREADS"}),
)


@hookimpl
def register_vendors(register) -> None:
    register(VendorSpec(name=VENDOR, description="example vendor: the host CPU's cores as examplechip devices",
                        device_kind="examplechip", backend=BACKEND))


@hookimpl
def discover_devices(vendor: str) -> DeviceSet | None:
    facts = cpu_facts()
    host = facts.get("model name", "unknown CPU")
    return DeviceSet(
        vendor=VENDOR,
        kind="examplechip",
        devices=[DeviceInfo(index=core, name=f"examplechip {MODEL} (core {core} of {host})")
                 for core in usable_cores()],
        runtime_version=f"emulated on the host CPU through torch's cpu device type",
        interconnect="host shared memory (gloo)",
    )


@hookimpl
def vendor_case_config(vendor, case, framework, nproc, nnodes, hardware_config):
    return find_vendor_config(CONFIGS, case.name, framework, nnodes, nproc, hardware_config)


@hookimpl
def device_peak_flops(devices: DeviceSet, precision: str) -> float | None:
    return peak_flops_per_chip(cpu_facts(), precision)


@hookimpl(wrapper=True)
def run(context: RunContext, env, dataset):
    launch: LaunchSpec | None = yield
    if launch is None:
        return launch
    # One chip per process: one thread each, so nproc processes use nproc cores.
    return launch.model_copy(update={"env": {**launch.env, "OMP_NUM_THREADS": "1"}})


@hookimpl(wrapper=True)
def execute(context: RunContext, launch: LaunchSpec, log_path: Path, observer):
    """Samples the training processes' CPU time and memory while they run."""
    monitor = ProcessTreeMonitor().start()
    try:
        outcome = yield
    finally:
        measured = monitor.stop()
    if outcome is not None:
        outcome.extras.update(measured)
    return outcome
