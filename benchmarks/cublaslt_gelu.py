"""The MLP's GeLU inside cuBLASLt's matrix products (CUDA only), which PyTorch does not expose.

Forward, ``GELU_AUX_BIAS``: one product writes ``gelu(x W^T + b)`` and keeps its input
``x W^T + b`` (the "aux" matrix) for the backward. Backward, ``DGELU_BGRAD``: the product that
gives the GeLU output's gradient (``g W2`` of the next linear) multiplies it by the GeLU's slope
at the kept input and sums the bias gradient, in its epilogue. The GeLU is the tanh
approximation, as the model's. No separate elementwise pass reads or writes the 4h-wide
activations (Megatron-LM gets the same from Transformer Engine). Called through ctypes on the
cuBLASLt library torch already loaded. Standalone (torch only).

Benchmark support only: on one H200 (2026-11-26, ``bench_mlp_gelu_epilogue.py``) both epilogues
ran slower than a plain product plus Inductor's GeLU kernels, so the PyTorch plugin does not use
them.
"""

from __future__ import annotations

import ctypes

import torch

# cublasLt.h (CUDA 12/13) enumerations.
_TRANSA, _TRANSB, _EPILOGUE, _BIAS_POINTER = 3, 4, 7, 8
_AUX_POINTER, _AUX_LD, _AUX_DATA_TYPE, _BIAS_DATA_TYPE = 11, 12, 22, 26
_EPILOGUE_GELU_AUX_BIAS, _EPILOGUE_DGELU_BGRAD = 32 | 128 | 4, 64 | 128 | 16
_OP_N, _OP_T = 0, 1
_COMPUTE_32F, _R_32F = 68, 0
_CUDA_TYPES = {torch.bfloat16: 14, torch.float16: 2}
_PREF_MAX_WORKSPACE_BYTES = 1
WORKSPACE_BYTES = 32 * 2**20


class _Heuristic(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspace_size", ctypes.c_size_t),
                ("state", ctypes.c_int), ("waves_count", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


class CublasLt:
    """A cuBLASLt handle and workspace on ``device``; the products' plans cached by shape."""

    def __init__(self, device: torch.device):
        self.lib = _load()
        handle = ctypes.c_void_p()
        self._check(self.lib.cublasLtCreate(ctypes.byref(handle)), "cublasLtCreate")
        self.handle = handle
        self.workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=device)
        self.plans: dict[tuple, tuple] = {}

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"{what} failed with cuBLAS status {status}")

    def _layout(self, dtype: int, rows: int, cols: int, ld: int) -> ctypes.c_void_p:
        layout = ctypes.c_void_p()
        self._check(self.lib.cublasLtMatrixLayoutCreate(ctypes.byref(layout), dtype, ctypes.c_uint64(rows),
                                                        ctypes.c_uint64(cols), ctypes.c_int64(ld)),
                    "cublasLtMatrixLayoutCreate")
        return layout

    def _set(self, desc, attribute: int, value) -> None:
        self._check(self.lib.cublasLtMatmulDescSetAttribute(desc, attribute, ctypes.byref(value),
                                                            ctypes.sizeof(value)),
                    f"cublasLtMatmulDescSetAttribute({attribute})")

    def _plan(self, key: tuple, epilogue: int, transa: int, m: int, n: int, k: int,
              lda: int, ldb: int, dtype: int):
        """The descriptor, layouts and algorithm for D (m x n, column-major) = op(A) B."""
        if key in self.plans:
            return self.plans[key]
        desc = ctypes.c_void_p()
        self._check(self.lib.cublasLtMatmulDescCreate(ctypes.byref(desc), _COMPUTE_32F, _R_32F),
                    "cublasLtMatmulDescCreate")
        self._set(desc, _TRANSA, ctypes.c_int32(transa))
        self._set(desc, _TRANSB, ctypes.c_int32(_OP_N))
        self._set(desc, _EPILOGUE, ctypes.c_uint32(epilogue))
        self._set(desc, _AUX_LD, ctypes.c_int64(m))
        self._set(desc, _AUX_DATA_TYPE, ctypes.c_int32(dtype))
        self._set(desc, _BIAS_DATA_TYPE, ctypes.c_int32(dtype))
        a_rows, a_cols = (k, m) if transa == _OP_T else (m, k)
        layouts = (self._layout(dtype, a_rows, a_cols, lda), self._layout(dtype, k, n, ldb),
                   self._layout(dtype, m, n, m))
        pref = ctypes.c_void_p()
        self._check(self.lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "cublasLtMatmulPreferenceCreate")
        size = ctypes.c_uint64(WORKSPACE_BYTES)
        self._check(self.lib.cublasLtMatmulPreferenceSetAttribute(pref, _PREF_MAX_WORKSPACE_BYTES,
                                                                  ctypes.byref(size), ctypes.sizeof(size)),
                    "cublasLtMatmulPreferenceSetAttribute")
        result, found = _Heuristic(), ctypes.c_int(0)
        # The heuristic reads the pointers' alignment from the descriptor: 256-byte aligned
        # stand-ins, as the caching allocator's blocks are.
        for attribute in (_BIAS_POINTER, _AUX_POINTER):
            self._set(desc, attribute, ctypes.c_void_p(self.workspace.data_ptr()))
        self._check(self.lib.cublasLtMatmulAlgoGetHeuristic(
            self.handle, desc, layouts[0], layouts[1], layouts[2], layouts[2], pref, 1,
            ctypes.byref(result), ctypes.byref(found)), "cublasLtMatmulAlgoGetHeuristic")
        self.lib.cublasLtMatmulPreferenceDestroy(pref)
        if found.value < 1:
            raise RuntimeError(f"cuBLASLt has no algorithm for epilogue {epilogue} at {key}")
        self.plans[key] = (desc, layouts, result)
        return self.plans[key]

    def _run(self, plan, a: torch.Tensor, b: torch.Tensor, d: torch.Tensor, bias: torch.Tensor,
             aux: torch.Tensor) -> None:
        desc, (a_layout, b_layout, d_layout), heuristic = plan
        self._set(desc, _BIAS_POINTER, ctypes.c_void_p(bias.data_ptr()))
        self._set(desc, _AUX_POINTER, ctypes.c_void_p(aux.data_ptr()))
        one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
        self._check(self.lib.cublasLtMatmul(
            self.handle, desc, ctypes.byref(one), ctypes.c_void_p(a.data_ptr()), a_layout,
            ctypes.c_void_p(b.data_ptr()), b_layout, ctypes.byref(zero),
            ctypes.c_void_p(d.data_ptr()), d_layout, ctypes.c_void_p(d.data_ptr()), d_layout,
            ctypes.byref(heuristic.algo), ctypes.c_void_p(self.workspace.data_ptr()),
            ctypes.c_size_t(WORKSPACE_BYTES), ctypes.c_void_p(torch.cuda.current_stream(d.device).cuda_stream)),
            "cublasLtMatmul")

    def linear_gelu(self, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor):
        """``(gelu(x W^T + b), x W^T + b)`` for row-major ``x`` (tokens, k), ``weight`` (n, k),
        ``bias`` (n,), all of one dtype: one product."""
        tokens, k = x.shape
        n = weight.shape[0]
        dtype = _CUDA_TYPES[x.dtype]
        # Row-major (tokens, n) is column-major (n, tokens): D = W (n x k) x^T (k x tokens).
        plan = self._plan(("gelu", tokens, k, n, x.dtype), _EPILOGUE_GELU_AUX_BIAS, _OP_T,
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
        dtype = _CUDA_TYPES[grad.dtype]
        # D (n x tokens, column-major) = W^T (n x h: the row-major weight as is) grad^T.
        plan = self._plan(("dgelu", tokens, h, n, grad.dtype), _EPILOGUE_DGELU_BGRAD, _OP_N,
                          n, tokens, h, n, h, dtype)
        out = torch.empty(tokens, n, dtype=grad.dtype, device=grad.device)
        bias_grad = torch.empty(n, dtype=grad.dtype, device=grad.device)
        self._run(plan, weight, grad, out, bias_grad, aux)
        return out, bias_grad


def _load() -> ctypes.CDLL:
    for name in ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        lib.cublasLtMatrixLayoutCreate.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64,
                                                   ctypes.c_uint64, ctypes.c_int64]
        lib.cublasLtMatmulDescSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                                       ctypes.c_size_t]
        lib.cublasLtMatmulPreferenceSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                                             ctypes.c_void_p, ctypes.c_size_t]
        lib.cublasLtMatmulAlgoGetHeuristic.argtypes = [ctypes.c_void_p] * 7 + [
            ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
        lib.cublasLtMatmul.argtypes = [ctypes.c_void_p] * 14 + [ctypes.c_size_t, ctypes.c_void_p]
        return lib
    raise OSError("no cuBLASLt library (libcublasLt.so.13 or .12) could be loaded")
