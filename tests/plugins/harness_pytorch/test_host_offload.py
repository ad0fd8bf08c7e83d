"""The host-offloaded AdamW makes the same updates as torch.optim.AdamW on the device."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from tests.plugins.harness_pytorch.flat_optimizers import assert_matches_adamw, make_model, split  # noqa: E402
from host_offload import HostOffloadAdamW  # noqa: E402


@pytest.mark.parametrize("chunk", [7, 1000])  # chunks smaller than a tensor, and one per group
def test_matches_adamw_with_clipping_and_accumulation(chunk):
    assert_matches_adamw(lambda decay, no_decay: HostOffloadAdamW(
        decay, no_decay, device=torch.device("cpu"), dtype=torch.float32, lr=1e-2,
        betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, chunk_elements=chunk))


def test_low_precision_weights_follow_the_fp32_master():
    model = make_model(0)
    host = HostOffloadAdamW(*split(model), device=torch.device("cpu"), dtype=torch.bfloat16,
                            lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    assert all(p.dtype == (torch.bfloat16 if p.dim() >= 2 else torch.float32) for p in model.parameters())
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(torch.randn(5, 8)).float().square().mean().backward()
    assert host.grads.dtype == torch.float32 and float(host.grads.abs().sum()) > 0
    host.step(1e-2, 1.0)
    torch.testing.assert_close(host.weights, host.master[:host.boundary].to(torch.bfloat16))
    torch.testing.assert_close(host.small_weights, host.master[host.boundary:])
    assert host.host_bytes == host.numel * 12
