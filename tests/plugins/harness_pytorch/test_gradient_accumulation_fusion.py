"""Gradient accumulation fusion: the block linears add their weight gradients into the flat fp32
gradients themselves (gpt_model.Linear + FlatParameters.expose_main_grads), giving the sums the
per-parameter hooks give, on CPU with the unfused product (CUDA's fused call is measured on GPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import tests.plugins.harness_pytorch.flat_optimizers  # noqa: E402,F401  (puts the scripts on sys.path)
from gpt_model import GPT, Linear, accumulate_weight_gradient, weight_gradient_fusion_unavailable  # noqa: E402
from host_offload import HostOffloadAdamW  # noqa: E402
from master_weights import DeviceMasterAdamW  # noqa: E402

OPTIMIZERS = {
    "device": lambda decay, no_decay, **kw: DeviceMasterAdamW(decay, no_decay, fused=False, **kw),
    "host": lambda decay, no_decay, **kw: HostOffloadAdamW(decay, no_decay, **kw),
}


def accumulated_gradients(fused: bool, compile_blocks: bool = False, micro_batches: int = 3,
                          optimizer: str = "device", recompute: str = "none"):
    """The flat fp32 gradients of a bf16 GPT after ``micro_batches`` micro-batches, and the model."""
    torch.manual_seed(0)
    model = GPT(vocab_size=128, seq_len=16, num_layers=2, hidden_size=32, num_heads=4,
                recompute=recompute)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    flat = OPTIMIZERS[optimizer](decay, no_decay, device=torch.device("cpu"), dtype=torch.bfloat16,
                                 lr=1e-3, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    if fused:
        assert flat.expose_main_grads() == len(decay)
        assert model.route_weight_gradients() == 8  # qkv, proj, fc, proj in each of 2 blocks
    if compile_blocks:
        model.compile_layers()
    tokens = torch.randint(0, 128, (micro_batches, 2, 17), generator=torch.Generator().manual_seed(1))
    for batch in tokens:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(batch[:, :-1].contiguous(), batch[:, 1:].contiguous()) / micro_batches
        loss.backward()
    return flat.grads.clone(), model


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))  # master weights on the device or the host
def test_routed_linears_accumulate_what_the_hooks_accumulate(optimizer):
    reference, _ = accumulated_gradients(fused=False, optimizer=optimizer)
    fused, model = accumulated_gradients(fused=True, optimizer=optimizer)
    # The hooks add bf16-rounded gradients; the fused path adds the fp32 product: equal to bf16
    # precision, and every element was reached (no gradient lost or counted twice).
    torch.testing.assert_close(fused, reference, rtol=2e-2, atol=1e-3)
    assert float(reference.abs().sum()) > 0
    relative = float((fused - reference).norm() / reference.norm())
    assert relative < 5e-3
    # The routed weights never get a compute-dtype .grad; the others are freed by their hook.
    assert all(p.grad is None for p in model.parameters())
    assert all(m.into_main_grad for m in model.blocks.modules() if isinstance(m, Linear))


def test_routed_linears_inside_compiled_blocks():
    """The fused linears are custom operators the compiler traces: the blocks stay whole (no
    graph break) and the compiled backward adds into the flat buffer itself."""
    import torch._dynamo

    reference, _ = accumulated_gradients(fused=False, compile_blocks=True, micro_batches=2)
    fused, model = accumulated_gradients(fused=True, compile_blocks=True, micro_batches=2)
    assert float((fused - reference).norm() / reference.norm()) < 5e-3
    block = model.blocks[0]._orig_mod
    x = torch.randn(2, 16, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        explained = torch._dynamo.explain(block)(x)
    assert explained.graph_break_count == 0 and explained.graph_count == 1


@pytest.mark.parametrize("recompute", ["full", "selective"])
def test_routed_linears_under_activation_checkpointing(recompute):
    """Checkpointing runs the routed linears' forward again in the backward pass: each weight
    gradient is still added once (the hook path, which autograd runs once, is the reference)."""
    reference, _ = accumulated_gradients(fused=False, micro_batches=2)
    fused, _ = accumulated_gradients(fused=True, micro_batches=2, recompute=recompute)
    torch.testing.assert_close(fused, reference, rtol=2e-2, atol=1e-3)
    assert float((fused - reference).norm() / reference.norm()) < 5e-3


def test_an_unrouted_model_in_eval_or_without_main_grad():
    torch.manual_seed(0)
    model = GPT(vocab_size=64, seq_len=8, num_layers=1, hidden_size=16, num_heads=2)
    with pytest.raises(ValueError, match="no main_grad"):
        model.route_weight_gradients()
    linear = Linear(4, 3)
    linear.weight.main_grad = torch.zeros(3, 4)
    linear.into_main_grad = True
    x = torch.randn(5, 4, requires_grad=True)
    linear.eval()  # evaluation and no-grad forwards are plain nn.Linear
    torch.testing.assert_close(linear(x), torch.nn.functional.linear(x, linear.weight, linear.bias))
    linear.train()
    out = linear(x)
    out.square().sum().backward()
    torch.testing.assert_close(linear.weight.main_grad, (2 * out.detach()).t() @ x.detach())
    assert linear.weight.grad is None and linear.bias.grad is not None and x.grad is not None


def test_accumulate_weight_gradient_adds_in_fp32():
    main_grad = torch.ones(3, 2)
    grad_output = torch.randn(7, 3).to(torch.bfloat16)
    inputs = torch.randn(7, 2).to(torch.bfloat16)
    accumulate_weight_gradient(main_grad, grad_output, inputs)
    torch.testing.assert_close(main_grad, 1 + grad_output.float().t() @ inputs.float())


def test_fusion_is_reported_unavailable_off_cuda():
    assert "CUDA" in weight_gradient_fusion_unavailable(torch.device("cpu"))
