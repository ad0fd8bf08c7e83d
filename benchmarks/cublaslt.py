"""cuBLASLt through ctypes on the library torch already loaded (CUDA only), for the benchmarks
that need what PyTorch does not expose: epilogues (``cublaslt_gelu.py``) and the heuristic's
other algorithms (``bench_gemm_algorithms_at_power_cap.py``). Standalone (torch only).

All matrices are column-major, as cuBLASLt sees them: a row-major torch tensor (r, c) is the
column-major (c, r) with leading dimension c.
"""

from __future__ import annotations

import ctypes

import torch

# cublasLt.h (CUDA 12/13) enumerations.
TRANSA, TRANSB, EPILOGUE, BIAS_POINTER = 3, 4, 7, 8
AUX_POINTER, AUX_LD, AUX_DATA_TYPE, BIAS_DATA_TYPE = 11, 12, 22, 26
OP_N, OP_T = 0, 1
COMPUTE_32F, R_32F = 68, 0
CUDA_TYPES = {torch.bfloat16: 14, torch.float16: 2, torch.float32: R_32F}
_PREF_MAX_WORKSPACE_BYTES = 1
WORKSPACE_BYTES = 32 * 2**20
# cublasLtMatmulAlgoConfigAttributes_t: what describe() reads, and each value's C type.
_ALGO_CONFIG = {"id": (0, ctypes.c_int32), "tile": (1, ctypes.c_uint32), "splitk": (2, ctypes.c_int32),
                "stages": (6, ctypes.c_uint32), "cluster": (8, ctypes.c_uint16)}


class Heuristic(ctypes.Structure):
    """cublasLtMatmulHeuristicResult_t: an algorithm and its workspace; ``state`` 0 is usable."""
    _fields_ = [("algo", ctypes.c_uint64 * 8), ("workspace_size", ctypes.c_size_t),
                ("state", ctypes.c_int), ("waves_count", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


class CublasLt:
    """A cuBLASLt handle and workspace on ``device``, and the calls around one product."""

    def __init__(self, device: torch.device):
        self.lib = _load()
        handle = ctypes.c_void_p()
        self.check(self.lib.cublasLtCreate(ctypes.byref(handle)), "cublasLtCreate")
        self.handle = handle
        self.workspace = torch.empty(WORKSPACE_BYTES, dtype=torch.uint8, device=device)

    @staticmethod
    def check(status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"{what} failed with cuBLAS status {status}")

    def layout(self, dtype: int, rows: int, cols: int, ld: int) -> ctypes.c_void_p:
        layout = ctypes.c_void_p()
        self.check(self.lib.cublasLtMatrixLayoutCreate(ctypes.byref(layout), dtype, ctypes.c_uint64(rows),
                                                       ctypes.c_uint64(cols), ctypes.c_int64(ld)),
                   "cublasLtMatrixLayoutCreate")
        return layout

    def set(self, desc, attribute: int, value) -> None:
        self.check(self.lib.cublasLtMatmulDescSetAttribute(desc, attribute, ctypes.byref(value),
                                                           ctypes.sizeof(value)),
                   f"cublasLtMatmulDescSetAttribute({attribute})")

    def descriptor(self, transa: int, transb: int) -> ctypes.c_void_p:
        """A product's descriptor: fp32 compute and scale, ``op(A)`` and ``op(B)``."""
        desc = ctypes.c_void_p()
        self.check(self.lib.cublasLtMatmulDescCreate(ctypes.byref(desc), COMPUTE_32F, R_32F),
                   "cublasLtMatmulDescCreate")
        self.set(desc, TRANSA, ctypes.c_int32(transa))
        self.set(desc, TRANSB, ctypes.c_int32(transb))
        return desc

    def heuristics(self, desc, a_layout, b_layout, d_layout, count: int) -> list[Heuristic]:
        """The heuristic's first ``count`` usable algorithms for D = op(A) op(B) (+ C, laid out
        as D), fastest predicted first, within this workspace."""
        pref = ctypes.c_void_p()
        self.check(self.lib.cublasLtMatmulPreferenceCreate(ctypes.byref(pref)), "cublasLtMatmulPreferenceCreate")
        size = ctypes.c_uint64(WORKSPACE_BYTES)
        self.check(self.lib.cublasLtMatmulPreferenceSetAttribute(pref, _PREF_MAX_WORKSPACE_BYTES,
                                                                 ctypes.byref(size), ctypes.sizeof(size)),
                   "cublasLtMatmulPreferenceSetAttribute")
        results, found = (Heuristic * count)(), ctypes.c_int(0)
        self.check(self.lib.cublasLtMatmulAlgoGetHeuristic(
            self.handle, desc, a_layout, b_layout, d_layout, d_layout, pref, count,
            ctypes.byref(results), ctypes.byref(found)), "cublasLtMatmulAlgoGetHeuristic")
        self.lib.cublasLtMatmulPreferenceDestroy(pref)
        return [results[i] for i in range(found.value) if results[i].state == 0]

    def matmul(self, desc, layouts: tuple, algo, a: torch.Tensor, b: torch.Tensor, d: torch.Tensor,
               beta: float = 0.0) -> None:
        """D = op(A) op(B) + beta D on the current stream, with ``algo`` (a heuristic's)."""
        a_layout, b_layout, d_layout = layouts
        one, scale = ctypes.c_float(1.0), ctypes.c_float(beta)
        self.check(self.lib.cublasLtMatmul(
            self.handle, desc, ctypes.byref(one), ctypes.c_void_p(a.data_ptr()), a_layout,
            ctypes.c_void_p(b.data_ptr()), b_layout, ctypes.byref(scale),
            ctypes.c_void_p(d.data_ptr()), d_layout, ctypes.c_void_p(d.data_ptr()), d_layout,
            ctypes.byref(algo), ctypes.c_void_p(self.workspace.data_ptr()),
            ctypes.c_size_t(WORKSPACE_BYTES), ctypes.c_void_p(torch.cuda.current_stream(d.device).cuda_stream)),
            "cublasLtMatmul")

    def describe(self, algo) -> str:
        """An algorithm's configuration as cuBLASLt reports it (``?`` where it does not)."""
        parts = []
        for name, (attribute, kind) in _ALGO_CONFIG.items():
            value, written = kind(0), ctypes.c_size_t(0)
            status = self.lib.cublasLtMatmulAlgoConfigGetAttribute(
                ctypes.byref(algo), attribute, ctypes.byref(value), ctypes.sizeof(value), ctypes.byref(written))
            parts.append(f"{name}={value.value if status == 0 else '?'}")
        return " ".join(parts)


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
        lib.cublasLtMatmulAlgoConfigGetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                                             ctypes.c_size_t, ctypes.c_void_p]
        return lib
    raise OSError("no cuBLASLt library (libcublasLt.so.13 or .12) could be loaded")
