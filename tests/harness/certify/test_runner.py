"""Rules are enforced before a point runs: a vendor config that moves the measurement
window is refused, and the certification fails naming the key (no training needed)."""

from __future__ import annotations

import pluggy
import pytest

from harness.models import DeviceInfo, DeviceSet, VendorSpec
from harness.models.vendor_config import VendorCaseConfig

hookimpl = pluggy.HookimplMarker("harness")
SUITE = """
[suite]
name = "one"
kind = "smoke"
scale = "smoke"
repeats = 3
max_steps = 12
skip_steps = 4
cv_bound = 0.35
checkpoints = [4, 8, 12]

[[point]]
case = "gpt3_125M"
nproc = [1]
"""


class WindowMovingVendor:
    """A vendor whose per-case config shortens the warm-up left out of FINAL_RESULT."""

    @hookimpl
    def register_vendors(self, register):
        register(VendorSpec(name="windowmover", description="test", device_kind="cpu"))

    @hookimpl
    def discover_devices(self, vendor):
        if vendor == "windowmover":
            return DeviceSet(vendor=vendor, kind="cpu", devices=[DeviceInfo(index=0, name="test cpu")])
        return None

    @hookimpl
    def vendor_case_config(self, vendor, case, framework, nproc, nnodes, hardware_config):
        if vendor == "windowmover":
            return VendorCaseConfig(name="moved.toml", values={"skip_steps": 1})
        return None


@pytest.fixture
def tampering_pm():
    from harness.plugin_manager import make_plugin_manager

    return make_plugin_manager(load_entrypoints=False, extra=(WindowMovingVendor(),))


def test_a_vendor_config_moving_the_window_is_refused(tmp_path, tampering_pm):
    from harness.certify.runner import CertifyRequest, run_certification
    from harness.certify.suite import Suite, parse_suite_text
    from harness.registry import Registry

    registry = Registry.from_plugins(tampering_pm)
    suite = Suite(spec=parse_suite_text(SUITE, "t"), text=SUITE, source="test")
    outcome = run_certification(tampering_pm, registry,
                                CertifyRequest(suite=suite, vendor="windowmover", output=tmp_path))
    cert = outcome.certification
    assert not cert.passed
    rules = [c for c in cert.checks if c.name == "rules"]
    assert len(rules) == 1 and not rules[0].passed and "skip_steps" in rules[0].reason
    assert cert.points[0].run_ids == []  # refused before anything ran
    assert outcome.bundle_path.is_file() and (outcome.folder / "report.html").is_file()
    assert "skip_steps" in (outcome.folder / "report.md").read_text()


class TinyGpuVendor:
    """A CUDA-like GPU vendor whose device has 1 MiB usable: no config fits."""

    @hookimpl
    def register_vendors(self, register):
        from harness.models.device import DeviceBackend, FrameworkDevice

        backend = DeviceBackend(device_type="cuda", addressed_by_local_rank=True,
                                frameworks={"torch": FrameworkDevice(device_type="cuda",
                                                                     dist_backend="nccl")})
        register(VendorSpec(name="tinygpu", description="test", device_kind="gpu", backend=backend))

    @hookimpl
    def discover_devices(self, vendor):
        if vendor == "tinygpu":
            return DeviceSet(vendor=vendor, kind="gpu", devices=[
                DeviceInfo(index=0, name="tiny gpu", memory_bytes=2 * 2**30 + 2**20)])
        return None


def test_a_point_that_does_not_fit_in_memory_is_refused_as_not_runnable_here(tmp_path):
    from harness.certify.runner import CertifyRequest, run_certification
    from harness.certify.suite import Suite, parse_suite_text
    from harness.plugin_manager import make_plugin_manager
    from harness.registry import Registry

    pm = make_plugin_manager(load_entrypoints=False, extra=(TinyGpuVendor(),))
    suite = Suite(spec=parse_suite_text(SUITE, "t"), text=SUITE, source="test")
    outcome = run_certification(pm, Registry.from_plugins(pm),
                                CertifyRequest(suite=suite, vendor="tinygpu", output=tmp_path))
    refused = outcome.certification.points[0].refused
    assert refused.startswith("cannot run on this machine: gpt3_125M needs about"), refused
    assert "tiny gpu has" in refused and outcome.certification.points[0].run_ids == []
