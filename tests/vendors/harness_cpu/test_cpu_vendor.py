"""The cpu vendor: discovery, and how it shapes the launch."""

from __future__ import annotations

import pytest

from harness.dispatch import HookRouter
from harness.errors import UserInputError
from harness.models import LaunchSpec
from harness.plugin_manager import make_plugin_manager
from harness.registry import Registry
from harness.runner.pipeline import RunRequest, plan
from harness.launch import usable_cores


def test_discovers_the_host_cpu():
    pm = make_plugin_manager(load_entrypoints=False, blocked=set())
    router = HookRouter(pm, Registry.from_plugins(pm))
    devices = router.discover_devices("cpu")
    assert devices.kind == "cpu" and devices.count == 1
    assert f"({usable_cores()} cores)" in devices.devices[0].name
    with pytest.raises(UserInputError, match="unknown vendor 'not-cpu'"):
        router.discover_devices("not-cpu")


def test_run_wrapper_hides_gpus_and_splits_threads(tmp_path):
    pm = make_plugin_manager(load_entrypoints=False, blocked=set())
    registry = Registry.from_plugins(pm)
    router = HookRouter(pm, registry)
    context = plan(pm, registry,
                   RunRequest(case="gpt3_125M", scale="smoke", nproc=2, output=tmp_path, cache_dir=tmp_path))
    launch = router.run(context, router.prepare_env(context), _dataset(tmp_path))
    assert isinstance(launch, LaunchSpec)
    assert launch.env["CUDA_VISIBLE_DEVICES"] == ""
    assert launch.env["OMP_NUM_THREADS"] == str(max(1, usable_cores() // 2))
    assert "torch.distributed.run" in launch.argv and "--nproc-per-node=2" in launch.argv


def _dataset(tmp_path):
    from harness.models import DatasetInfo

    return DatasetInfo(kind="gpt-npy", path=str(tmp_path), files=["x_ids.npy", "x_idx.npz"], synthesized=True)
