"""Shared by the tests of the flat-parameter optimizers (master_weights.py, host_offload.py):
a toy model with matrices, biases and a LayerNorm, and the decay / no-decay split."""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR

SCRIPTS = Path(__file__).resolve().parents[3] / "plugins" / "harness_pytorch" / "scripts"
for folder in (SHARED_SCRIPTS_DIR, SCRIPTS):  # as the launch orders them: SCRIPTS first
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def make_model(seed: int, linear=torch.nn.Linear) -> torch.nn.Module:
    """``linear``: the linear layer class (``gpt_model.Linear`` to route weight gradients)."""
    torch.manual_seed(seed)
    return torch.nn.Sequential(linear(8, 16), torch.nn.LayerNorm(16), linear(16, 4))


def split(model: torch.nn.Module) -> tuple[list, list]:
    decay = [p for p in model.parameters() if p.dim() >= 2]
    return decay, [p for p in model.parameters() if p.dim() < 2]


def assert_matches_adamw(make_optimizer, steps: int = 4) -> None:
    """``make_optimizer(decay, no_decay)`` (fp32, on the CPU) makes torch AdamW's updates,
    with gradient clipping and three accumulated micro-batches, and frees every gradient."""
    reference, flat = make_model(0), make_model(0)
    decay, no_decay = split(reference)
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}],
                            lr=1e-2, betas=(0.9, 0.95), eps=1e-8)
    optimizer = make_optimizer(*split(flat))
    torch.manual_seed(1)
    for step in range(steps):
        for x in [torch.randn(5, 8) * (step + 1) for _ in range(3)]:
            (reference(x).square().mean() / 3).backward()
            (flat(x).square().mean() / 3).backward()
        expected = torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.5)
        opt.step()
        opt.zero_grad(set_to_none=True)
        norm = optimizer.step(1e-2, 0.5)
        assert abs(norm - float(expected)) <= 1e-5 * float(expected)
        for a, b in zip(reference.parameters(), flat.parameters()):
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
        assert all(p.grad is None for p in flat.parameters())
        assert float(optimizer.grads.abs().sum()) == 0.0  # zeroed for the next step
