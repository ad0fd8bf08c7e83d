"""The MLP's bias + tanh-GeLU, forward and backward, as two Triton kernels on CUDA.

Inductor's own kernels for ``F.gelu(x + b, approximate="tanh")`` and its backward (with the bias
gradient) move about 2.5 TB/s on an H200 (``benchmarks/bench_gpt_block_pieces.py``, BENCHMARKS.md
2026-11-26): the precise fp32 ``tanh`` and divisions cost more than the memory traffic. Here the
same function is computed as ``u * sigmoid(2 z)`` (equal to ``0.5 u (1 + tanh z)``) with the GPU's
fast exponential and approximate reciprocal, accurate to a unit in the last place of the bf16 or
fp16 result over the whole range; the bias is added in fp32 (no rounding of the pre-activation),
and the backward recomputes the pre-activation from the saved input instead of keeping it.
Elsewhere (the CPU, other dtypes) the same function in PyTorch. Standalone (torch, and triton
where torch has it).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only torch builds come without triton
    triton = None

SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
CUBIC = 0.044715
# A tile of 32 rows x 256 columns over 8 warps: 32 elements a thread, 16-byte loads along a row.
BLOCK_ROWS, BLOCK_COLS, WARPS = 32, 256, 8
KERNEL_DTYPES = (torch.bfloat16, torch.float16)

if triton is not None:
    @triton.jit
    def _sigmoid_2z(u, K: tl.constexpr, C: tl.constexpr, FAST: tl.constexpr):
        # 0.5 (1 + tanh z) = sigmoid(2 z): no cancellation where tanh z is near -1 (u below
        # about -3), so the result keeps its relative accuracy there too.
        e = tl.exp(-2.0 * K * (u + C * u * u * u))
        if FAST:  # the approximate reciprocal (2 ulp in fp32) instead of an IEEE division
            return tl.math.fdiv(tl.full(u.shape, 1.0, tl.float32), 1.0 + e, ieee_rounding=False)
        else:
            return 1.0 / (1.0 + e)

    @triton.jit
    def _forward_kernel(x, bias, y, rows, cols, K: tl.constexpr, C: tl.constexpr,
                        BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, FAST: tl.constexpr):
        r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
        c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
        inside = (r[:, None] < rows) & (c[None, :] < cols)
        at = r[:, None] * cols + c[None, :]
        b = tl.load(bias + c, mask=c < cols, other=0.0).to(tl.float32)
        u = tl.load(x + at, mask=inside, other=0.0).to(tl.float32) + b[None, :]
        tl.store(y + at, (u * _sigmoid_2z(u, K, C, FAST)).to(y.dtype.element_ty), mask=inside)

    @triton.jit
    def _backward_kernel(grad, x, bias, grad_x, partial, rows, cols, K: tl.constexpr,
                         C: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
                         FAST: tl.constexpr):
        r = tl.program_id(0).to(tl.int64) * BLOCK_R + tl.arange(0, BLOCK_R)
        c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
        inside = (r[:, None] < rows) & (c[None, :] < cols)
        at = r[:, None] * cols + c[None, :]
        b = tl.load(bias + c, mask=c < cols, other=0.0).to(tl.float32)
        u = tl.load(x + at, mask=inside, other=0.0).to(tl.float32) + b[None, :]
        s = _sigmoid_2z(u, K, C, FAST)
        # d/du [u s(2z)] = s + u s (1 - s) 2 dz/du
        slope = s + u * s * (1.0 - s) * 2.0 * K * (1.0 + 3.0 * C * u * u)
        g = tl.load(grad + at, mask=inside, other=0.0).to(tl.float32) * slope
        tl.store(grad_x + at, g.to(grad_x.dtype.element_ty), mask=inside)
        # This tile's share of the bias gradient; the column sums of ``partial`` finish it.
        tl.store(partial + tl.program_id(0).to(tl.int64) * cols + c, tl.sum(g, axis=0), mask=c < cols)


def _grid(rows: int, cols: int) -> tuple[int, int]:
    return triton.cdiv(rows, BLOCK_ROWS), triton.cdiv(cols, BLOCK_COLS)


def triton_forward(x: torch.Tensor, bias: torch.Tensor, fast: bool = True) -> torch.Tensor:
    """``gelu_tanh(x + bias)`` by the kernel: ``x`` contiguous (..., cols), ``bias`` (cols,)."""
    cols = x.shape[-1]
    rows = x.numel() // cols
    y = torch.empty_like(x)
    _forward_kernel[_grid(rows, cols)](x, bias, y, rows, cols, K=SQRT_2_OVER_PI, C=CUBIC,
                                       BLOCK_R=BLOCK_ROWS, BLOCK_C=BLOCK_COLS, FAST=fast,
                                       num_warps=WARPS)
    return y


def triton_backward(grad: torch.Tensor, x: torch.Tensor, bias: torch.Tensor,
                    fast: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """The gradients of ``gelu_tanh(x + bias)`` for ``x`` (its dtype) and ``bias`` (fp32 sums,
    returned in the bias's dtype) given the output's gradient ``grad`` (contiguous like x)."""
    cols = x.shape[-1]
    rows = x.numel() // cols
    grid = _grid(rows, cols)
    grad_x = torch.empty_like(x)
    partial = torch.empty(grid[0], cols, dtype=torch.float32, device=x.device)
    _backward_kernel[grid](grad, x, bias, grad_x, partial, rows, cols, K=SQRT_2_OVER_PI, C=CUBIC,
                           BLOCK_R=BLOCK_ROWS, BLOCK_C=BLOCK_COLS, FAST=fast, num_warps=WARPS)
    return grad_x, partial.sum(0).to(bias.dtype)


def kernel_applies(x: torch.Tensor, bias: torch.Tensor) -> bool:
    """Whether ``bias_gelu`` runs the kernels: triton present, ``x`` a contiguous bf16/fp16
    CUDA tensor on the current device, ``bias`` a matching vector on the same device."""
    return (triton is not None and x.is_cuda and bias.device == x.device
            and x.device.index == torch.accelerator.current_device_index()
            and x.dtype in KERNEL_DTYPES and x.is_contiguous() and bias.is_contiguous()
            and bias.dim() == 1 and bias.shape[0] == x.shape[-1] and x.numel() > 0)


# The kernels as custom operators, so that torch.compile keeps them whole inside a compiled
# block (0 graph breaks) instead of tracing into the launch.
_NAMESPACE = "harness"


def _registered(name: str) -> bool:
    try:
        getattr(getattr(torch.ops, _NAMESPACE), name)
    except (AttributeError, RuntimeError):
        return False
    return True


def _define_operators() -> None:
    if _registered("bias_gelu"):
        return

    @torch.library.custom_op(f"{_NAMESPACE}::bias_gelu", mutates_args=())
    def forward(x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        return triton_forward(x, bias)

    @forward.register_fake
    def _(x, bias):
        return torch.empty_like(x)

    @torch.library.custom_op(f"{_NAMESPACE}::bias_gelu_backward", mutates_args=())
    def backward_op(grad: torch.Tensor, x: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return triton_backward(grad.contiguous(), x, bias)

    @backward_op.register_fake
    def _(grad, x, bias):
        return torch.empty_like(x), torch.empty_like(bias)

    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(*inputs)

    def backward(ctx, grad):
        x, bias = ctx.saved_tensors
        return getattr(torch.ops, _NAMESPACE).bias_gelu_backward(grad, x, bias)

    forward.register_autograd(backward, setup_context=setup_context)


_define_operators()


def bias_gelu(x: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``F.gelu(x + bias, approximate="tanh")`` in ``x``'s dtype: by the kernels where they
    apply, by PyTorch elsewhere (no bias: PyTorch)."""
    if bias is not None and kernel_applies(x, bias):
        return getattr(torch.ops, _NAMESPACE).bias_gelu(x, bias)
    return F.gelu(x if bias is None else x + bias.to(x.dtype), approximate="tanh")
