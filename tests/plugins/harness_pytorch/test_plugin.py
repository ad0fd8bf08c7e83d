"""The PyTorch plugin's environment records torch's build tag."""

from __future__ import annotations

import pytest


def test_torch_build_tag_matches_the_installed_torch():
    torch = pytest.importorskip("torch")
    from harness_pytorch.plugin import torch_build_tag

    local = torch.__version__.split("+", 1)[1] if "+" in torch.__version__ else None
    assert torch_build_tag() == local


def test_unsupported_reasons_for_fp8_offload_and_optimizer_held_masters(tmp_path):
    from harness.dispatch import HookRouter
    from harness.plugin_manager import make_plugin_manager
    from harness.registry import Registry
    from harness.runner.pipeline import RunRequest, plan

    pm = make_plugin_manager(load_entrypoints=False)
    registry = Registry.from_plugins(pm)

    def reasons(**fields):
        request = RunRequest(case="gpt3_125M", vendor="cpu", framework="pytorch", scale="smoke",
                             output=tmp_path, cache_dir=tmp_path, **fields)
        return HookRouter(pm, registry).unsupported_reasons(plan(pm, registry, request))

    assert reasons(precision="bf16", set_pairs=["master_weights=optimizer"]) == []
    assert any("runs in bf16 or fp8" in r for r in reasons(set_pairs=["master_weights=optimizer"]))
    assert any("master_weights=optimizer runs on one device" in r
               for r in reasons(precision="bf16", nproc=2, set_pairs=["master_weights=optimizer"]))
    assert any("offload=cpu moves the optimizer" in r for r in reasons(set_pairs=["offload=cpu"]))
