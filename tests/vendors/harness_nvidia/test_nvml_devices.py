"""NVML discovery: absent NVML, a fake NVML, visible-devices selection, interconnect."""

from __future__ import annotations

import sys

import pytest

from harness.errors import UnavailableError
from harness_nvidia import nvml_devices
from harness_nvidia.nvml_devices import discover, load_nvml, visible_selection

from .fake_nvml import FakeGpu, make_fake_nvml


def four_gpus(nvlinks: int = 18):
    return [FakeGpu(uuid=f"GPU-{i}abc", nvlinks=nvlinks) for i in range(4)]


def test_nvml_package_absent_is_a_clear_unavailable_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml raises ImportError
    with pytest.raises(UnavailableError, match="nvidia-ml-py"):
        load_nvml()


def test_no_driver_is_a_clear_unavailable_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", make_fake_nvml([], init_error="Driver Not Loaded"))
    with pytest.raises(UnavailableError, match="no NVIDIA driver or GPU.*Driver Not Loaded"):
        load_nvml()


def test_zero_gpus_is_unavailable():
    with pytest.raises(UnavailableError, match="no NVIDIA GPUs"):
        discover(make_fake_nvml([]), environ={})


def test_fingerprint_from_fake_nvml():
    devices = discover(make_fake_nvml(four_gpus(), cuda=13000), environ={})
    assert devices.count == 4 and devices.kind == "gpu" and devices.vendor == "nvidia"
    assert devices.devices[0].name == "NVIDIA H200"
    assert devices.devices[0].memory_bytes == 150_000_000_000
    assert devices.driver_version == "580.159.04"  # bytes decoded
    assert devices.runtime_version == "13.0"
    assert devices.interconnect == "NVLink (18 active links on GPU 0)"
    assert devices.visible_devices_env == "CUDA_VISIBLE_DEVICES"


def test_pcie_and_single_gpu_interconnect():
    assert discover(make_fake_nvml(four_gpus(nvlinks=0)), environ={}).interconnect == "PCIe"
    assert discover(make_fake_nvml([FakeGpu()]), environ={}).interconnect is None


def test_cuda_visible_devices_narrows_and_orders_devices():
    nvml = make_fake_nvml(four_gpus())
    devices = discover(nvml, environ={"CUDA_VISIBLE_DEVICES": "2,0"})
    assert [d.index for d in devices.devices] == [2, 0]
    devices = discover(nvml, environ={"CUDA_VISIBLE_DEVICES": "GPU-3,GPU-1a"})  # UUID prefixes
    assert [d.index for d in devices.devices] == [3, 1]


def test_visible_list_stops_at_first_unknown_entry_like_cuda():
    all_devices = discover(make_fake_nvml(four_gpus()), environ={}).devices
    assert [d.index for d in visible_selection(all_devices, "1,7,2")] == [1]
    assert visible_selection(all_devices, "") == []
    assert len(visible_selection(all_devices, None)) == 4


def test_visible_devices_selecting_nothing_is_unavailable():
    with pytest.raises(UnavailableError, match="selects none"):
        discover(make_fake_nvml(four_gpus()), environ={"CUDA_VISIBLE_DEVICES": "9"})


def test_discovery_hook_uses_injected_nvml_and_shuts_it_down(monkeypatch):
    from harness_nvidia import plugin

    fake = make_fake_nvml(four_gpus())
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    devices = plugin.discover_devices(vendor="nvidia")
    assert devices.count == 4 and fake.shutdowns == 1
    assert nvml_devices.SUGGESTION  # the hint every unavailable message ends with


def test_discovery_records_the_cuda_compute_capability():
    devices = discover(make_fake_nvml([FakeGpu(capability=(9, 0)), FakeGpu(name="NVIDIA A100-SXM4-80GB",
                                                                             capability=(8, 0))]), environ={})
    assert [d.compute_capability for d in devices.devices] == ["9.0", "8.0"]


def test_discovery_without_a_compute_capability_falls_back_to_the_name():
    from types import SimpleNamespace

    from harness_nvidia import plugin

    volta = [FakeGpu(name="Tesla V100-SXM2-32GB", uuid=f"GPU-{i}", capability=None) for i in range(2)]
    devices = discover(make_fake_nvml(volta), environ={})  # the NVML call raises: no capability
    assert [d.compute_capability for d in devices.devices] == [None, None]
    old_pynvml = make_fake_nvml(volta)
    del old_pynvml.nvmlDeviceGetCudaComputeCapability  # a pynvml without the call at all
    assert discover(old_pynvml, environ={}) == devices
    settings = SimpleNamespace(precision="bf16", nproc=2)
    context = SimpleNamespace(devices=devices, config=SimpleNamespace(settings=settings))
    assert plugin.unsupported_reason(context=context) == (
        "bf16 training needs an Ampere or newer GPU (compute capability 8.0); Tesla V100-SXM2-32GB "
        "has no bf16: use --precision fp16 or fp32")
