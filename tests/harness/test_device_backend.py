"""The device seam in the core: a vendor's DeviceBackend reaches the resolved config."""

from __future__ import annotations

import json

import pytest

from harness.errors import UnavailableError
from harness.models.device import DeviceBackend, FrameworkDevice
from harness.app import Harness
from harness.runner.pipeline import RunRequest, plan


def backend(precisions) -> DeviceBackend:
    return DeviceBackend(device_type="acme", addressed_by_local_rank=True,
                         frameworks={"torch": FrameworkDevice(device_type="acme", dist_backend="hccl")},
                         precisions=frozenset(precisions))


def test_precisions_serialise_sorted_so_the_config_hash_is_stable():
    assert backend(["fp32", "bf16", "fp16"]).model_dump(mode="json")["precisions"] == ["bf16", "fp16", "fp32"]


@pytest.fixture
def harness():
    return Harness.load(load_entrypoints=False, blocked=set())


def test_plan_puts_the_vendors_backend_in_the_config(harness, tmp_path):
    from harness_cpu.plugin import BACKEND

    context = plan(harness, RunRequest(case="gpt3_125M", scale="smoke", output=tmp_path))
    assert context.config.device == BACKEND
    written = json.loads(context.config.model_dump_json())  # what config.json holds for the scripts
    assert written["device"]["frameworks"]["torch"] == {"device_type": "cpu", "import_modules": [],
                                                        "dist_backend": "gloo"}
    other = context.config.model_copy(update={"device": backend(["fp32"])})
    assert other.config_hash != context.config.config_hash  # the backend is part of the run


def test_a_precision_the_backend_lacks_is_refused_before_launch(harness, tmp_path):
    with pytest.raises(UnavailableError, match="vendor 'cpu' has no fp16 .*use --precision bf16 or fp32"):
        plan(harness, RunRequest(case="gpt3_125M", scale="smoke", precision="fp16",
                                                       output=tmp_path))
