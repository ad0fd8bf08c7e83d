"""The PyTorch plugin's environment records torch's build tag."""

from __future__ import annotations

import pytest


def test_torch_build_tag_matches_the_installed_torch():
    torch = pytest.importorskip("torch")
    from harness_pytorch.plugin import torch_build_tag

    local = torch.__version__.split("+", 1)[1] if "+" in torch.__version__ else None
    assert torch_build_tag() == local


def test_unsupported_reasons_for_fp8_offload_and_optimizer_held_masters(unsupported_reasons):
    def reasons(**fields):
        return unsupported_reasons("gpt3_125M", "pytorch", **fields)

    assert reasons(precision="bf16", set_pairs=["master_weights=optimizer"]) == []
    assert any("runs in bf16 or fp8" in r for r in reasons(set_pairs=["master_weights=optimizer"]))
    assert any("master_weights=optimizer runs on one device" in r
               for r in reasons(precision="bf16", nproc=2, set_pairs=["master_weights=optimizer"]))
    assert any("offload=cpu moves the optimizer" in r for r in reasons(set_pairs=["offload=cpu"]))


def test_a_vendor_without_a_torch_device_is_an_unsupported_reason(tmp_path):
    """Said before a sweep runs the point, as for every other refusal of the PyTorch plugin."""
    from harness import hookimpl
    from harness.dispatch import HookRouter
    from harness.models import DeviceInfo, DeviceSet, VendorSpec
    from harness.models.device import DeviceBackend, FrameworkDevice
    from harness.plugin_manager import make_plugin_manager
    from harness.registry import Registry
    from harness.runner.pipeline import RunRequest, plan

    class PaddleOnlyVendor:  # its chips run Paddle, not torch
        @hookimpl
        def register_vendors(self, register):
            backend = DeviceBackend(device_type="acme", addressed_by_local_rank=True,
                                    frameworks={"paddle": FrameworkDevice(device_type="acme")},
                                    precisions=frozenset({"fp32", "bf16"}))
            register(VendorSpec(name="acme", device_kind="npu", backend=backend))

        @hookimpl
        def discover_devices(self, vendor):
            return DeviceSet(vendor="acme", kind="npu", devices=[DeviceInfo(index=0, name="Acme N1")])

    pm = make_plugin_manager(load_entrypoints=False, blocked=set(), extra=(PaddleOnlyVendor(),))
    registry = Registry.from_plugins(pm)
    context = plan(pm, registry, RunRequest(case="gpt3_125M", vendor="acme", framework="pytorch",
                                            scale="smoke", output=tmp_path, cache_dir=tmp_path))
    reasons = HookRouter(pm, registry).unsupported_reasons(context)
    assert any("vendor 'acme' declares no torch device" in r for r in reasons)
