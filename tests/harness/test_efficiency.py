"""MFU and energy arithmetic, and the two hooks that feed it (model_flops, device_peak_flops)."""

from __future__ import annotations

import pytest

from harness import hookimpl
from harness.models import DeviceInfo, DeviceSet, FlopsEstimate
from harness.models.efficiency import compute_efficiency
from harness.runner.pipeline import RunRequest, plan
from tests.harness.core_harness import FIXTURE_VENDOR, fixture_harness


def test_mfu_against_hand_computed_value():
    # 4 GPUs together 100,000 tokens/s, 9.0e9 FLOPs per token: 25,000 tokens/s per GPU,
    # 2.25e14 FLOP/s per GPU; against a 989.4e12 peak that is 22.74 %.
    flops = FlopsEstimate(per_unit=9.0e9, unit="tokens/s", formula="palm-6N+12Lhs")
    eff = compute_efficiency(throughput=100_000.0, unit="tokens/s", world_size=4, flops=flops,
                             peak_flops_per_device=989.4e12, busy_power_w=2800.0)
    assert eff.achieved_flops_per_device == pytest.approx(2.25e14)
    assert eff.mfu == pytest.approx(2.25e14 / 989.4e12)
    assert round(eff.mfu, 4) == 0.2274
    # 2,800 W for 100,000 tokens/s: 0.028 J per token.
    assert eff.energy_per_unit_j == pytest.approx(0.028)
    assert eff.flops_formula == "palm-6N+12Lhs"


def test_no_peak_gives_flops_but_no_mfu():
    flops = FlopsEstimate(per_unit=1e9, unit="tokens/s", formula="f")
    eff = compute_efficiency(throughput=10.0, unit="tokens/s", world_size=1, flops=flops,
                             peak_flops_per_device=None, busy_power_w=None)
    assert eff.mfu is None and eff.achieved_flops_per_device == pytest.approx(1e10)
    assert eff.energy_per_unit_j is None


def test_flops_in_another_unit_are_not_mixed():
    flops = FlopsEstimate(per_unit=1e9, unit="samples/s", formula="f")
    assert compute_efficiency(throughput=10.0, unit="tokens/s", world_size=1, flops=flops,
                              peak_flops_per_device=1e12, busy_power_w=None) is None


def test_nothing_to_report_is_none():
    assert compute_efficiency(throughput=None, unit="tokens/s", world_size=1, flops=None,
                              peak_flops_per_device=None, busy_power_w=None) is None


class FakeGpuVendor:
    """A vendor with 3 fake GPUs and a peak table of one entry, to drive the hooks."""

    @hookimpl
    def register_vendors(self, register):
        from harness.models import VendorSpec

        register(VendorSpec(name="fakegpu", device_kind="gpu"))

    @hookimpl
    def discover_devices(self, vendor):
        return DeviceSet(vendor="fakegpu", kind="gpu",
                         devices=[DeviceInfo(index=i, name="Fake X1") for i in range(3)])

    @hookimpl
    def device_peak_flops(self, devices, precision):
        return {"bf16": 100e12}.get(precision)


def test_hook_device_peak_flops():
    harness = fixture_harness(FakeGpuVendor())
    router = harness.router()
    devices = router.discover_devices("fakegpu")
    assert router.device_peak_flops(devices, "bf16") == 100e12
    assert router.device_peak_flops(devices, "fp32") is None
    # another vendor's devices: the fake GPUs' peak table is not asked
    cpu = router.discover_devices(FIXTURE_VENDOR)
    assert router.device_peak_flops(cpu, "bf16") is None


def test_hook_model_flops(gpt_harness, tmp_path):
    # the case catalog's formula, whichever framework trains the case (here the fixture's)
    context = plan(gpt_harness, RunRequest(case="gpt3_1.3B", vendor=FIXTURE_VENDOR, output=tmp_path))
    estimate = gpt_harness.router().model_flops(context)
    # 24 layers, hidden 2048, seq 2048, vocab 50304: N = 24(12h² + 13h) + (V + s)h + 2h.
    h = 2048
    n = 24 * (12 * h * h + 13 * h) + (50304 + 2048) * h + 2 * h
    assert estimate.parameters == n == 1_315_819_520
    assert estimate.per_unit == 6 * n + 12 * 24 * h * 2048
    assert estimate.unit == "tokens/s" and estimate.formula == "palm-6N+12Lhs"


def test_accelerator_runs_default_to_every_visible_device(tmp_path):
    harness = fixture_harness(FakeGpuVendor())
    context = plan(harness, RunRequest(case="gpt3_1.3B", vendor="fakegpu", output=tmp_path))
    assert context.config.settings.nproc == 3
    context = plan(harness, RunRequest(case="gpt3_1.3B", vendor=FIXTURE_VENDOR, output=tmp_path))
    assert context.config.settings.nproc == 1
