"""The reviewed peak table: lookups by NVML name, precision, and what it refuses to guess."""

from __future__ import annotations

import pytest

from harness.models import DeviceInfo, DeviceSet
from harness_nvidia import plugin
from harness_nvidia.peak_flops import PEAK_TABLE, peak_flops, supports_bf16, supports_fp8

T = 1e12


@pytest.mark.parametrize("name, precision, expected", [
    ("NVIDIA H100 80GB HBM3", "bf16", 989.4 * T),   # SXM5
    ("NVIDIA H200", "bf16", 989.4 * T),
    ("NVIDIA H200", "fp16", 989.4 * T),
    ("NVIDIA H100 PCIe", "bf16", 756.0 * T),
    ("NVIDIA H100 NVL", "bf16", 835.5 * T),
    ("NVIDIA H200 NVL", "bf16", 835.5 * T),
    ("NVIDIA A100-SXM4-80GB", "bf16", 312.0 * T),
    ("NVIDIA A100-PCIE-40GB", "tf32", 156.0 * T),
    ("Tesla V100-SXM2-16GB", "fp16", 125.0 * T),
    ("Tesla V100-PCIE-32GB", "fp16", 112.0 * T),
    ("Tesla V100-SXM2-32GB", "fp32", 15.7 * T),      # no TF32 on Volta: the CUDA-core rate
])
def test_table_lookup(name, precision, expected):
    assert peak_flops(name, precision) == pytest.approx(expected)


def test_fp32_runs_use_the_tf32_tensor_core_peak_where_there_is_one():
    assert peak_flops("NVIDIA H200", "fp32") == pytest.approx(494.7 * T)
    assert peak_flops("NVIDIA H200", "fp32", tf32_for_fp32=False) == pytest.approx(66.9 * T)


def test_unknown_device_or_precision_gives_none_not_a_guess():
    assert peak_flops("NVIDIA GeForce RTX 4090", "bf16") is None
    assert peak_flops("Tesla V100-SXM2-16GB", "bf16") is None  # Volta has no bf16


def test_dense_figures_only():
    # Dense bf16 is at most half of the largest sparse datasheet figure (1,979 TFLOPS).
    assert all(row.get("bf16", 0) <= 990 * T for _, row in PEAK_TABLE)


def test_hook_gives_one_peak_for_identical_gpus_and_none_for_mixed_or_unknown_ones():
    gpus = DeviceSet(vendor="nvidia", kind="gpu",
                     devices=[DeviceInfo(index=i, name="NVIDIA H200") for i in range(2)])
    assert plugin.device_peak_flops(devices=gpus, precision="bf16") == pytest.approx(989.4 * T)
    mixed = gpus.model_copy(update={"devices": [DeviceInfo(index=0, name="NVIDIA H200"),
                                                 DeviceInfo(index=1, name="NVIDIA A100-SXM4-80GB")]})
    assert plugin.device_peak_flops(devices=mixed, precision="bf16") is None
    cpu = DeviceSet(vendor="cpu", kind="cpu", devices=[DeviceInfo(index=0, name="x")])
    assert plugin.device_peak_flops(devices=cpu, precision="bf16") is None


def _context(names: list[str], precision: str, capability: str | None = None):
    """A planned run's context as the nvidia vendor's unsupported_reason reads it: the devices
    discovered (a fake list here, all of one compute capability) and the precision."""
    from types import SimpleNamespace

    devices = DeviceSet(vendor="nvidia", kind="gpu",
                        devices=[DeviceInfo(index=i, name=name, compute_capability=capability)
                                 for i, name in enumerate(names)])
    settings = SimpleNamespace(precision=precision, nproc=len(names))
    return SimpleNamespace(devices=devices, config=SimpleNamespace(settings=settings))


@pytest.mark.parametrize("name", ["Tesla V100-SXM2-32GB", "Tesla V100-PCIE-16GB", "Tesla T4",
                                  "Quadro RTX 8000", "NVIDIA TITAN V", "Tesla P100-PCIE-16GB"])
def test_bf16_on_a_pre_ampere_gpu_is_refused_before_launch(name):
    reason = plugin.unsupported_reason(context=_context([name], "bf16"))
    assert reason == (f"bf16 training needs an Ampere or newer GPU (compute capability 8.0); {name} "
                      "has no bf16: use --precision fp16 or fp32")
    assert plugin.unsupported_reason(context=_context([name], "fp16")) is None


@pytest.mark.parametrize("name", ["NVIDIA H200", "NVIDIA A100-SXM4-80GB", "NVIDIA RTX A6000",
                                  "NVIDIA GeForce RTX 4090", "NVIDIA L40S"])
def test_bf16_on_ampere_or_newer_or_an_unknown_gpu_is_not_refused(name):
    assert plugin.unsupported_reason(context=_context([name], "bf16")) is None


def test_fp8_before_hopper_is_refused():
    assert "fp8 tensor cores" in plugin.unsupported_reason(context=_context(["NVIDIA A100-SXM4-80GB"], "fp8"))
    assert plugin.unsupported_reason(context=_context(["NVIDIA H200"], "fp8")) is None


UNKNOWN = "NVIDIA Future GPU"  # a name neither the peak table nor the pre-Ampere families know


def test_bf16_is_refused_by_compute_capability_where_the_name_is_unknown():
    assert plugin.unsupported_reason(context=_context([UNKNOWN], "bf16")) is None  # name: not known
    assert plugin.unsupported_reason(context=_context([UNKNOWN], "bf16", "7.0")) == (
        f"bf16 training needs an Ampere or newer GPU (compute capability 8.0); {UNKNOWN} "
        "(compute capability 7.0) has no bf16: use --precision fp16 or fp32")
    assert plugin.unsupported_reason(context=_context([UNKNOWN], "bf16", "8.0")) is None


def test_fp8_is_accepted_by_compute_capability_where_the_name_is_unknown():
    assert plugin.unsupported_reason(context=_context([UNKNOWN], "fp8", "9.0")) is None
    assert plugin.unsupported_reason(context=_context([UNKNOWN], "fp8", "8.9")) is None  # Ada


@pytest.mark.parametrize("name", [UNKNOWN, "NVIDIA H100 80GB HBM3"])
def test_fp8_is_refused_by_compute_capability_8_0_whatever_the_name(name):
    assert plugin.unsupported_reason(context=_context([name], "fp8", "8.0")) == (
        "fp8 training needs fp8 tensor cores (compute capability 8.9: Ada, Hopper or newer); "
        f"{name} (compute capability 8.0) has none: use --precision bf16")


@pytest.mark.parametrize("capability", [None, "", "sm90"])  # absent or unreadable: the name decides
def test_without_a_compute_capability_the_name_table_decides(capability):
    assert supports_bf16("Tesla V100-SXM2-32GB", capability) is False
    assert supports_bf16("NVIDIA A100-SXM4-80GB", capability) is True
    assert supports_bf16(UNKNOWN, capability) is None
    assert supports_fp8("NVIDIA H200", capability) is True
    assert supports_fp8("NVIDIA A100-SXM4-80GB", capability) is False
    assert supports_fp8(UNKNOWN, capability) is False
