"""The device-held fp32 masters (master_weights=optimizer) make AdamW's updates, and a bf16 GPT
trained that way follows the fp32-parameter (autocast) run."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
from tests.plugins.harness_pytorch.flat_optimizers import assert_matches_adamw, make_model, split  # noqa: E402
from gpt_model import GPT  # noqa: E402
from master_weights import DeviceMasterAdamW  # noqa: E402


@pytest.mark.parametrize("chunk", [7, 1000])  # optimizer tensors smaller than a parameter, and one per group
def test_matches_adamw_with_clipping_and_accumulation(chunk):
    assert_matches_adamw(lambda decay, no_decay: DeviceMasterAdamW(
        decay, no_decay, device=torch.device("cpu"), dtype=torch.float32, lr=1e-2,
        betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, fused=False, chunk_elements=chunk))


def test_bf16_weights_are_the_rounded_fp32_masters_and_small_parameters_are_the_masters():
    model = make_model(0)
    master = DeviceMasterAdamW(*split(model), device=torch.device("cpu"), dtype=torch.bfloat16,
                               lr=3e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, fused=False)
    assert [p.dtype for p in model.parameters()] == [torch.bfloat16, torch.float32, torch.float32,
                                                     torch.float32, torch.bfloat16, torch.float32]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(torch.randn(5, 8)).float().square().mean().backward()
    assert master.grads.dtype == torch.float32 and float(master.grads.abs().sum()) > 0
    before = master.master.clone()
    master.step(3e-3, 1.0)
    assert not torch.equal(before, master.master)
    torch.testing.assert_close(master.weights, master.master[:master.boundary].to(torch.bfloat16))
    # LayerNorm weights and biases are views of the fp32 master itself: updated in place.
    assert master.small_weights.data_ptr() == master.master[master.boundary:].data_ptr()
    assert master.device_bytes == master.numel * 16


def train_losses(master_weights: str, steps: int = 12) -> list[float]:
    torch.manual_seed(0)
    model = GPT(vocab_size=256, seq_len=32, num_layers=2, hidden_size=64, num_heads=4)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    if master_weights == "optimizer":
        optimizer = DeviceMasterAdamW(decay, no_decay, device=torch.device("cpu"), dtype=torch.bfloat16,
                                      lr=3e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1, fused=False)
    else:
        adamw = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=3e-3, betas=(0.9, 0.95), eps=1e-8)
    # One fixed batch, memorised step by step: the loss falls fast and far.
    tokens = torch.randint(0, 256, (4, 33), generator=torch.Generator().manual_seed(1))
    losses = []
    for _ in range(steps):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous())
        loss.backward()
        losses.append(float(loss.detach()))
        if master_weights == "optimizer":
            optimizer.step(3e-3, 1.0)
        else:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            adamw.step()
            adamw.zero_grad(set_to_none=True)
    return losses


def test_a_bf16_gpt_with_optimizer_held_masters_follows_the_autocast_run():
    autocast, optimizer = train_losses("model"), train_losses("optimizer")
    assert optimizer[-1] < optimizer[0] - 1.5  # it learns
    # The same model, data and AdamW; only where the bf16 rounding happens differs.
    for a, b in zip(autocast, optimizer):
        assert b == pytest.approx(a, rel=0.005)
