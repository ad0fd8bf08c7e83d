"""A vendor backend naming a device type torch cannot load: one line, exit 2, before launch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness import hookimpl
from harness.errors import UnavailableError, UserInputError
from harness.models import DeviceInfo, DeviceSet, VendorSpec
from harness.models.device import DeviceBackend, FrameworkDevice
from harness.app import Harness
from harness.runner.pipeline import RunRequest, execute, plan
from harness_pytorch.device_check import check_torch_device

REPO = Path(__file__).resolve().parents[3]
SCRIPTS = REPO / "plugins" / "harness_pytorch" / "scripts"


def acme_backend(*modules: str) -> DeviceBackend:
    return DeviceBackend(device_type="acme", addressed_by_local_rank=True,
                         frameworks={"torch": FrameworkDevice(device_type="acme", import_modules=modules,
                                                              dist_backend="hccl")},
                         precisions=frozenset({"fp32", "bf16"}))


def test_a_module_that_is_not_installed_is_named():
    with pytest.raises(UserInputError, match=r"^torch has no device type 'acme'; is torch_acme installed\?$"):
        check_torch_device(sys.executable, "acme", acme_backend("torch_acme"))


def test_a_device_type_torch_does_not_know_is_refused_by_asking_torch():
    with pytest.raises(UserInputError, match=r"^torch has no device type 'acme'; is torch_acme installed\?$"):
        check_torch_device(sys.executable, "acme", acme_backend())


def test_cpu_and_cuda_need_no_probe():
    from harness_cpu.plugin import BACKEND as CPU
    from harness_nvidia.plugin import BACKEND as NVIDIA

    check_torch_device("/nonexistent/python", "cpu", CPU)  # would fail if it started a probe
    check_torch_device("/nonexistent/python", "nvidia", NVIDIA)


def test_a_vendor_without_a_torch_device_is_unavailable():
    backend = DeviceBackend(device_type="acme", addressed_by_local_rank=True, frameworks={})
    with pytest.raises(UnavailableError, match="declares no torch device"):
        check_torch_device(sys.executable, "acme", backend)


class AcmeVendor:
    @hookimpl
    def register_vendors(self, register):
        register(VendorSpec(name="acme", device_kind="npu", backend=acme_backend("torch_acme")))

    @hookimpl
    def discover_devices(self, vendor):
        return DeviceSet(vendor="acme", kind="npu", devices=[DeviceInfo(index=0, name="Acme N1")])


def test_harness_run_refuses_before_anything_starts(tmp_path):
    harness = Harness.load(load_entrypoints=False, blocked=set(), extra=(AcmeVendor(),))
    request = RunRequest(case="gpt3_125M", vendor="acme", scale="smoke", output=tmp_path / "results",
                         cache_dir=tmp_path / "cache")
    context = plan(harness, request)
    with pytest.raises(UserInputError, match="torch has no device type 'acme'; is torch_acme installed"):
        execute(harness, context, request)
    assert not (tmp_path / "cache" / "data").exists()  # refused before the data were made


def test_the_script_refuses_an_unknown_device_type_with_one_line():
    from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR

    code = ("import sys; sys.path[:0] = sys.argv[1:]; import torch_setup; "
            "torch_setup.load_torch_device({'device_type': 'acme', 'frameworks': {'torch': {'device_type': 'acme'}}})")
    done = subprocess.run([sys.executable, "-c", code, str(SCRIPTS), str(SHARED_SCRIPTS_DIR)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stdout.strip() == "error: torch has no device type 'acme'; is torch_acme installed?"
    assert "Traceback" not in done.stderr
