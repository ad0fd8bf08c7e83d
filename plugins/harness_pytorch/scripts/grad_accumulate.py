"""Adding a compute-dtype gradient into its fp32 accumulator at the speed of the GPU's memory.

``fp32.add_(bf16)`` takes PyTorch's unvectorised mixed-dtype path: about 2.5 TB/s on an H200
(10 bytes a parameter), 212 ms of each optimizer step of gpt3_6.7B at 8 micro-batches
(BENCHMARKS.md, 2026-11-25). It is paid for every weight of every micro-batch wherever the
matrix products cannot accumulate into the fp32 gradients themselves: fp8 (torchao's linears
hand autograd a bf16 weight gradient), gradient accumulation fusion off, the output head. On
CUDA a Triton kernel that loads, converts and adds wide vectors does the same arithmetic (one
fp32 addition of the converted value, as ``add_`` does) in one pass; elsewhere ``add_``.
Standalone (torch, and triton where torch has it).
"""

from __future__ import annotations

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only torch builds come without triton
    triton = None

# Elements a program adds: 4,096 over 4 warps is 32 per thread, so each thread issues 16-byte
# loads of both dtypes; large enough that a 200M-element matrix is ~50k programs.
BLOCK = 4096

if triton is not None:
    @triton.jit
    def _accumulate_kernel(accumulator, gradient, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        inside = offsets < n
        g = tl.load(gradient + offsets, mask=inside).to(tl.float32)
        a = tl.load(accumulator + offsets, mask=inside)
        tl.store(accumulator + offsets, a + g, mask=inside)


def triton_accumulate(accumulator: torch.Tensor, gradient: torch.Tensor) -> None:
    """``accumulator += gradient`` by the Triton kernel: both contiguous with the same number of
    elements, the accumulator fp32. Callable wherever triton runs (a GPU, or its interpreter)."""
    n = accumulator.numel()
    _accumulate_kernel[(triton.cdiv(n, BLOCK),)](accumulator, gradient, n, BLOCK=BLOCK, num_warps=4)


def accumulate(accumulator: torch.Tensor, gradient: torch.Tensor) -> None:
    """Add ``gradient`` (any float dtype, any shape with the accumulator's number of elements)
    into the fp32 ``accumulator`` (1-D, contiguous, e.g. a slice of the flat gradients)."""
    if (triton is not None and accumulator.is_cuda and gradient.is_cuda
            and accumulator.dtype == torch.float32 and accumulator.is_contiguous()
            and gradient.is_contiguous() and gradient.numel() == accumulator.numel()):
        triton_accumulate(accumulator, gradient)
    else:
        accumulator.add_(gradient.reshape(-1))
