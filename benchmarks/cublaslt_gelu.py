"""The MLP's GeLU inside cuBLASLt's matrix products (CUDA only), which PyTorch does not expose.

Forward, ``GELU_AUX_BIAS``: one product writes ``gelu(x W^T + b)`` and keeps its input
``x W^T + b`` (the "aux" matrix) for the backward. Backward, ``DGELU_BGRAD``: the product that
gives the GeLU output's gradient (``g W2`` of the next linear) multiplies it by the GeLU's slope
at the kept input and sums the bias gradient, in its epilogue. The GeLU is the tanh
approximation, as the model's. No separate elementwise pass reads or writes the 4h-wide
activations (Megatron-LM gets the same from Transformer Engine). Called through ctypes
(``cublaslt.py``).

Benchmark support only: on one H200 (2026-11-26, ``bench_mlp_gelu_epilogue.py``) both epilogues
ran slower than a plain product plus Inductor's GeLU kernels, so the PyTorch plugin does not use
them.
"""

from __future__ import annotations

import ctypes

import torch

import cublaslt
from cublaslt import AUX_DATA_TYPE, AUX_LD, AUX_POINTER, BIAS_DATA_TYPE, BIAS_POINTER, EPILOGUE, OP_N, OP_T

_EPILOGUE_GELU_AUX_BIAS, _EPILOGUE_DGELU_BGRAD = 32 | 128 | 4, 64 | 128 | 16


class CublasLt(cublaslt.CublasLt):
    """cuBLASLt with the GeLU epilogues; the products' plans cached by shape."""

    def __init__(self, device: torch.device):
        super().__init__(device)
        self.plans: dict[tuple, tuple] = {}

    def _plan(self, key: tuple, epilogue: int, transa: int, m: int, n: int, k: int,
              lda: int, ldb: int, dtype: int):
        """The descriptor, layouts and algorithm for D (m x n, column-major) = op(A) B."""
        if key in self.plans:
            return self.plans[key]
        desc = self.descriptor(transa, OP_N)
        self.set(desc, EPILOGUE, ctypes.c_uint32(epilogue))
        self.set(desc, AUX_LD, ctypes.c_int64(m))
        self.set(desc, AUX_DATA_TYPE, ctypes.c_int32(dtype))
        self.set(desc, BIAS_DATA_TYPE, ctypes.c_int32(dtype))
        a_rows, a_cols = (k, m) if transa == OP_T else (m, k)
        layouts = (self.layout(dtype, a_rows, a_cols, lda), self.layout(dtype, k, n, ldb),
                   self.layout(dtype, m, n, m))
        # The heuristic reads the pointers' alignment from the descriptor: 256-byte aligned
        # stand-ins, as the caching allocator's blocks are.
        for attribute in (BIAS_POINTER, AUX_POINTER):
            self.set(desc, attribute, ctypes.c_void_p(self.workspace.data_ptr()))
        found = self.heuristics(desc, *layouts, count=1)
        if not found:
            raise RuntimeError(f"cuBLASLt has no algorithm for epilogue {epilogue} at {key}")
        self.plans[key] = (desc, layouts, found[0])
        return self.plans[key]

    def _run(self, plan, a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, bias: torch.Tensor,
             aux: torch.Tensor) -> None:
        desc, layouts, heuristic = plan
        self.set(desc, BIAS_POINTER, ctypes.c_void_p(bias.data_ptr()))
        self.set(desc, AUX_POINTER, ctypes.c_void_p(aux.data_ptr()))
        self.matmul(desc, layouts, heuristic.algo, a, b, d)

    def linear_gelu(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor):
        """``(gelu(x W^T + b), x W^T + b)`` for row-major ``x`` (tokens, k), ``weight`` (n, k),
        ``bias`` (n,), all of one dtype: one product."""
        tokens, k = x.shape
        n = weight.shape[0]
        dtype = cublaslt.CUDA_TYPES[x.dtype]
        # Row-major (tokens, n) is column-major (n, tokens): D = W (n x k) x^T (k x tokens).
        plan = self._plan(("gelu", tokens, k, n, x.dtype), _EPILOGUE_GELU_AUX_BIAS, OP_T,
                          n, tokens, k, k, k, dtype)
        out = torch.empty(tokens, n, dtype=x.dtype, device=x.device)
        aux = torch.empty_like(out)
        self._run(plan, weight, x, out, bias, aux)
        return out, aux

    def dgelu_product(self, grad: torch.Tensor, weight: torch.Tensor, aux: torch.Tensor):
        """``(d, bias_grad)``: ``d = (grad W) * gelu'(aux)`` and its column sums, for row-major
        ``grad`` (tokens, h), the next linear's ``weight`` (h, n), ``aux`` (tokens, n)."""
        tokens, h = grad.shape
        n = weight.shape[1]
        dtype = cublaslt.CUDA_TYPES[grad.dtype]
        # D (n x tokens, column-major) = W^T (n x h: the row-major weight as is) grad^T.
        plan = self._plan(("dgelu", tokens, h, n, grad.dtype), _EPILOGUE_DGELU_BGRAD, OP_N,
                          n, tokens, h, n, h, dtype)
        out = torch.empty(tokens, n, dtype=grad.dtype, device=grad.device)
        bias_grad = torch.empty(n, dtype=grad.dtype, device=grad.device)
        self._run(plan, weight, grad, out, bias_grad, aux)
        return out, bias_grad

