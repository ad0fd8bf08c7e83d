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
