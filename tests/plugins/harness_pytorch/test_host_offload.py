"""The host-offloaded AdamW makes the same updates as torch.optim.AdamW on the device."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
SCRIPTS = Path(__file__).resolve().parents[3] / "plugins" / "harness_pytorch" / "scripts"
sys.path[:0] = [str(SCRIPTS)]
from host_offload import HostOffloadAdamW  # noqa: E402


def make_model(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4))


def split(model):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    return decay, [p for p in model.parameters() if p.dim() < 2]


@pytest.mark.parametrize("chunk", [7, 1000])  # chunks smaller than a tensor, and one per group
def test_matches_adamw_with_clipping_and_accumulation(chunk):
    reference, offloaded = make_model(0), make_model(0)
    decay, no_decay = split(reference)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-2, betas=(0.9, 0.95), eps=1e-8)
    host = HostOffloadAdamW(*split(offloaded), device=torch.device("cpu"), dtype=torch.float32,
                            lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                            chunk_elements=chunk)
    torch.manual_seed(1)
    for step in range(4):
        batches = [torch.randn(5, 8) * (step + 1) for _ in range(3)]
        for x in batches:  # three accumulated micro-batches
            (reference(x).square().mean() / 3).backward()
            (offloaded(x).square().mean() / 3).backward()
        expected = torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.5)
        opt.step()
        opt.zero_grad(set_to_none=True)
        norm = host.step(1e-2, 0.5)
        assert norm == pytest.approx(float(expected), rel=1e-5)
        for a, b in zip(reference.parameters(), offloaded.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
        assert all(p.grad is None for p in offloaded.parameters())
        assert float(host.grads.abs().sum()) == 0.0  # the accumulator is zeroed for the next step


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
