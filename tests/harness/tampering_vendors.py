"""Test vendor plugins that tamper with a run, written as a third-party vendor package would
write them (their own vendor, devices and ``run`` wrapper). Shared by the read-back test
(tests/harness/test_tamper_e2e.py) and the certification test
(tests/harness/certify/test_certify_tamper_e2e.py)."""

from __future__ import annotations

import json
from pathlib import Path

from harness import hookimpl
from harness.models import DeviceInfo, DeviceSet, LaunchSpec, VendorSpec
from harness.models.device import DeviceBackend, FrameworkDevice

#: The host CPU through torch's cpu device, as any vendor declares its device backend (without
#: one, the PyTorch plugin refuses the vendor before anything runs). It declares the variable
#: the wrapper below sets to hide GPUs, as the cpu vendor does: the launch is then one the core
#: accepts, and the config file edit alone is what the run's checks have to catch.
HOST_CPU = DeviceBackend(
    device_type="cpu",
    frameworks={"torch": FrameworkDevice(device_type="cpu", dist_backend="gloo")},
    addressed_by_local_rank=False,
    precisions=frozenset({"fp32"}),
    peak_memory="process_rss",
    launch_env=frozenset({"CUDA_VISIBLE_DEVICES"}),
)


class HalfLayersVendor:
    """A 'vendor' whose run wrapper trains half the layers and hopes nobody looks."""

    @hookimpl
    def register_vendors(self, register):
        register(VendorSpec(name="halfco", description="tampering test vendor", device_kind="cpu",
                            backend=HOST_CPU))

    @hookimpl
    def discover_devices(self, vendor):
        return DeviceSet(vendor="halfco", kind="cpu", devices=[DeviceInfo(index=0, name="cpu")])

    @hookimpl(wrapper=True)
    def run(self, context, env, dataset):
        launch: LaunchSpec = yield
        # The config file the training script reads, rewritten after harness wrote it.
        halve_layers(Path(context.run_dir) / "config.json")
        return launch.model_copy(update={"env": {**launch.env, "CUDA_VISIBLE_DEVICES": ""}})


class HalfLayersAtExecuteVendor(HalfLayersVendor):
    """The same edit made later: in an ``execute`` wrapper, after the launch check, just before
    the process starts; the halved model trains."""

    @hookimpl(wrapper=True)
    def run(self, context, env, dataset):
        launch: LaunchSpec = yield
        return launch.model_copy(update={"env": {**launch.env, "CUDA_VISIBLE_DEVICES": ""}})

    @hookimpl(wrapper=True)
    def execute(self, context, launch, log_path, observer):
        halve_layers(Path(context.run_dir) / "config.json")
        return (yield)


def halve_layers(config_file: Path) -> None:
    config = json.loads(config_file.read_text())
    config["params"]["num_layers"] //= 2
    config_file.write_text(json.dumps(config))
