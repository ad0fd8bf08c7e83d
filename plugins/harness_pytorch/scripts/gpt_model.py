"""A GPT decoder (GPT-2/3 architecture): pre-LayerNorm blocks, learned positions, tied embeddings.

Standalone: imports torch only, so it runs in any environment that has torch.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


def accumulate_weight_gradient(main_grad: torch.Tensor, grad_output: torch.Tensor,
                               inputs: torch.Tensor) -> None:
    """``main_grad += grad_output^T @ inputs``: a linear's weight gradient (2-D token-major
    operands in the compute dtype) added into its fp32 accumulator by the matrix product itself.

    On CUDA one cuBLAS call with an fp32 output and beta = 1 (Megatron-LM's gradient
    accumulation fusion, which it gets from an apex extension): no compute-dtype gradient is
    written, read back and added in a separate pass. Elsewhere the same sum in fp32, unfused.
    """
    if main_grad.device.type == "cuda":
        torch.addmm(main_grad, grad_output.t(), inputs, out_dtype=torch.float32, out=main_grad)
    else:
        main_grad.addmm_(grad_output.t().float(), inputs.float())


def weight_gradient_fusion_unavailable(device: torch.device) -> str | None:
    """Why ``accumulate_weight_gradient`` cannot run fused on ``device``, or None: it is tried
    once on small operands and checked against the unfused sum."""
    if device.type != "cuda":
        return f"fused only on CUDA (torch's fp32-output matrix product), not {device.type}"
    try:
        generator = torch.Generator(device=device).manual_seed(0)
        grad_output = torch.randn(64, 32, device=device, generator=generator).to(torch.bfloat16)
        inputs = torch.randn(64, 16, device=device, generator=generator).to(torch.bfloat16)
        main_grad = torch.ones(32, 16, device=device)
        expected = main_grad + grad_output.float().t() @ inputs.float()
        accumulate_weight_gradient(main_grad, grad_output, inputs)
    except (RuntimeError, TypeError) as exc:  # an older torch or a device without the kernel
        return f"torch {torch.__version__} cannot add a bf16 product into fp32 in place: {exc}"
    if not torch.allclose(main_grad, expected, rtol=1e-3, atol=1e-2):
        return "the fused product disagreed with the unfused sum on this device"
    return None


# The fused linear as two custom operators, so that torch.compile traces through them: an
# autograd.Function mutating the accumulator has to run outside the compiled blocks, each block
# then runs as five compiled pieces, and their host time measured more than the fusion saves on
# gpt3_1.3B. The backward operator declares its mutation of
# ``main_grad``, so the compiler calls it on the accumulator itself.
_NAMESPACE = "harness"


def _registered(name: str) -> bool:
    """Whether this process defined the operator already (the module imported twice)."""
    try:
        getattr(getattr(torch.ops, _NAMESPACE), name)
    except (AttributeError, RuntimeError):
        return False
    return True


def _define_operators() -> None:
    if _registered("linear_into_main_grad"):
        return

    @torch.library.custom_op(f"{_NAMESPACE}::linear_into_main_grad", mutates_args=(),
                             schema="(Tensor x, Tensor weight, Tensor? bias, Tensor main_grad) -> Tensor")
    def forward(x, weight, bias, main_grad):
        return F.linear(x, weight, None if bias is None else bias.to(weight.dtype))

    @forward.register_fake
    def _(x, weight, bias, main_grad):
        return x.new_empty((*x.shape[:-1], weight.shape[0]), dtype=weight.dtype)

    @torch.library.custom_op(f"{_NAMESPACE}::linear_into_main_grad_backward", mutates_args=("main_grad",),
                             schema="(Tensor grad_output, Tensor x, Tensor weight, Tensor(a!) main_grad) -> Tensor")
    def backward_op(grad_output, x, weight, main_grad):
        flat = grad_output.reshape(-1, grad_output.shape[-1])
        accumulate_weight_gradient(main_grad, flat, x.reshape(-1, x.shape[-1]))
        return grad_output @ weight

    @backward_op.register_fake
    def _(grad_output, x, weight, main_grad):
        return x.new_empty(x.shape)

    def setup_context(ctx, inputs, output):
        x, weight, bias, main_grad = inputs
        ctx.save_for_backward(x, weight, main_grad)
        ctx.has_bias = bias is not None

    def backward(ctx, grad_output):
        x, weight, main_grad = ctx.saved_tensors
        grad_output = grad_output.to(weight.dtype)
        grad_input = backward_op(grad_output, x, weight, main_grad)
        grad_bias = (grad_output.reshape(-1, grad_output.shape[-1]).sum(0, dtype=torch.float32)
                     if ctx.has_bias else None)
        return grad_input, None, grad_bias, None  # no weight gradient: main_grad has it

    forward.register_autograd(backward, setup_context=setup_context)


_define_operators()


def linear_into_main_grad(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x W^T + b`` in the weight's dtype whose weight gradient is added into
    ``weight.main_grad`` instead of reaching autograd: the weight gets no ``.grad``."""
    # Cast here, not inside the operator, so that the compiler fuses it into its producer.
    return getattr(torch.ops, _NAMESPACE).linear_into_main_grad(
        x.to(weight.dtype), weight, bias, weight.main_grad)


class Linear(nn.Linear):
    """``nn.Linear`` that can add its weight gradient straight into an fp32 accumulator.

    ``into_main_grad`` (off by default; ``GPT.route_weight_gradients`` turns it on) makes a
    training forward use ``linear_into_main_grad``: the weight must then carry ``main_grad``, its
    slice of the optimizer's flat fp32 gradients (``master_weights.FlatParameters``).
    """

    into_main_grad = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.into_main_grad and self.training and torch.is_grad_enabled():
            return linear_into_main_grad(x, self.weight, self.bias)
        return super().forward(x)


class CausalSelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int, dropout: float):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not divisible by {heads} heads")
        self.heads = heads
        self.qkv = Linear(hidden, 3 * hidden)
        self.proj = Linear(hidden, hidden)
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(x).split(hidden, dim=2)
        shape = (batch, seq, self.heads, hidden // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        # Flash / memory-efficient kernels where the device has them.
        out = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )
        return self.proj(out.transpose(1, 2).reshape(batch, seq, hidden))


class MLP(nn.Module):
    def __init__(self, hidden: int, ffn_hidden: int):
        super().__init__()
        self.fc = Linear(hidden, ffn_hidden)
        self.proj = Linear(ffn_hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn_hidden: int, dropout: float, recompute: str):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads, dropout)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = MLP(hidden, ffn_hidden)
        self.drop = nn.Dropout(dropout)
        # "selective" recomputes the MLP only: its 4h-wide activations dominate the memory
        # once attention runs through the flash kernel.
        self.recompute_mlp = recompute == "selective"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.ln1(x)))
        if self.recompute_mlp and self.training:
            return x + self.drop(checkpoint(self.mlp, self.ln2(x), use_reentrant=False))
        return x + self.drop(self.mlp(self.ln2(x)))


class GPT(nn.Module):
    def __init__(self, *, vocab_size: int, seq_len: int, num_layers: int, hidden_size: int,
                 num_heads: int, ffn_multiplier: int = 4, dropout: float = 0.0,
                 init_std: float = 0.02, recompute: str = "none"):
        super().__init__()
        if recompute not in ("none", "full", "selective"):
            raise ValueError(f"recompute must be none, full or selective, got {recompute!r}")
        self.recompute_full = recompute == "full"
        self.wte = nn.Embedding(vocab_size, hidden_size)
        self.wpe = nn.Embedding(seq_len, hidden_size)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            Block(hidden_size, num_heads, ffn_multiplier * hidden_size, dropout, recompute)
            for _ in range(num_layers)
        )
        self.ln_f = nn.LayerNorm(hidden_size)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied input/output embeddings
        # The dtype of the residual stream when the weights themselves are low precision
        # (host-offloaded optimizer): fp32, as the embeddings of an fp32 model give it.
        self.residual_dtype: torch.dtype | None = None
        self._init_weights(init_std, num_layers)

    def _init_weights(self, std: float, num_layers: int) -> None:
        for name, param in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(param)
            elif param.dim() == 1:  # LayerNorm weights
                nn.init.ones_(param)
            elif name.endswith("proj.weight"):  # residual projections, GPT-2 scaling
                nn.init.normal_(param, 0.0, std / math.sqrt(2 * num_layers))
            else:
                nn.init.normal_(param, 0.0, std)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())  # tied weights counted once

    def route_weight_gradients(self) -> int:
        """Make the blocks' linears add their weight gradients into their weights' ``main_grad``
        (which the caller has set); returns how many linears do."""
        linears = [m for m in self.blocks.modules() if isinstance(m, Linear)]
        for linear in linears:
            if getattr(linear.weight, "main_grad", None) is None:
                raise ValueError("route_weight_gradients: a block weight has no main_grad")
            linear.into_main_grad = True
        return len(linears)

    def compile_layers(self) -> None:
        """``torch.compile`` each block and the output head with its loss, not the whole model.

        The blocks are identical, so one compiled graph serves all of them (parameters are
        graph inputs): compilation takes seconds per distinct graph instead of a full unroll
        of every layer, and it composes with DDP, FSDP2 and activation checkpointing.
        """
        # Wrapped (not compiled in place) so that hooks DDP/FSDP2 add later stay outside the
        # compiled region, as torchtitan does.
        for index, block in enumerate(self.blocks):
            self.blocks[index] = torch.compile(block)
        self._head_loss = torch.compile(self._head_loss)

    def _head_loss(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.lm_head(self.ln_f(x))
        # The loss in fp32 whatever the autocast dtype: bf16 log-softmax over 50k classes loses digits.
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        if self.residual_dtype is not None:
            x = x.to(self.residual_dtype)
        x = self.drop(x)
        for block in self.blocks:
            if self.recompute_full and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        if targets is None:
            return self.lm_head(self.ln_f(x))
        return self._head_loss(x, targets)
