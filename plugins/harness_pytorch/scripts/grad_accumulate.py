"""Adding a compute-dtype gradient into its fp32 accumulator at the speed of the GPU's memory.

``fp32.add_(bf16)`` takes PyTorch's unvectorised mixed-dtype path, well below the GPU's memory
bandwidth (``benchmarks/bench_grad_accumulate.py`` measures both), a visible share of each
8-micro-batch optimizer step of gpt3_6.7B. It is paid for every weight of every micro-batch
wherever the matrix products cannot accumulate into the fp32 gradients themselves: fp8
(torchao's linears hand autograd a bf16 weight gradient), gradient accumulation fusion off, the
tied embedding. On CUDA a Triton kernel that loads, converts and adds wide vectors does the same
arithmetic (the gradient converted to fp32, one fp32 addition, as ``add_`` does for bf16, fp16
and fp32 gradients) in one pass, close to the memory bandwidth; elsewhere ``add_``. Standalone (torch, and triton
where torch has it).
"""

from __future__ import annotations

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # CPU-only torch builds come without triton
    triton = None

# Elements a program adds: 4,096 over 4 warps is 32 per thread, so each thread can issue 16-byte
# loads of both dtypes (the flat gradients' matrix slices start 16-byte aligned: every matrix
# has a multiple of 16 elements); large enough that a 200M-element matrix is ~50k programs.
BLOCK = 4096
# Gradient dtypes whose conversion to fp32 is exact, so the kernel's sum is bitwise ``add_``'s
# (``add_`` adds an fp64 gradient in fp64 and rounds once: not the same).
KERNEL_DTYPES = (torch.bfloat16, torch.float16, torch.float32)

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
    elements, the accumulator fp32. Launches on the current device. Callable wherever triton
    runs (a GPU, or its interpreter)."""
    n = accumulator.numel()
    _accumulate_kernel[(triton.cdiv(n, BLOCK),)](accumulator, gradient, n, BLOCK=BLOCK, num_warps=4)


def kernel_applies(accumulator: torch.Tensor, gradient: torch.Tensor) -> bool:
    """Whether ``accumulate`` uses the Triton kernel: triton present, both tensors contiguous on
    the current CUDA device, an fp32 accumulator, a gradient of ``KERNEL_DTYPES``, equal sizes."""
    return (triton is not None and accumulator.is_cuda and gradient.device == accumulator.device
            and accumulator.device.index == torch.accelerator.current_device_index()
            and accumulator.dtype == torch.float32 and gradient.dtype in KERNEL_DTYPES
            and accumulator.is_contiguous() and gradient.is_contiguous()
            and gradient.numel() == accumulator.numel())


def accumulate(accumulator: torch.Tensor, gradient: torch.Tensor) -> None:
    """Add ``gradient`` (any shape with the accumulator's number of elements) into the fp32
    ``accumulator`` (1-D, e.g. a slice of the flat gradients)."""
    if kernel_applies(accumulator, gradient):
        triton_accumulate(accumulator, gradient)
    else:
        accumulator.add_(gradient.reshape(-1))
