"""The fp32 gradient accumulation kernel (grad_accumulate.py): the Triton kernel adds exactly what
``add_`` adds (run on the CPU through Triton's interpreter; on a GPU machine the same test runs
the kernel itself), and the dispatch falls back to ``add_`` where the kernel does not apply."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from tests.plugins.harness_pytorch.flat_optimizers import SCRIPTS  # noqa: E402  (scripts on sys.path)
import grad_accumulate  # noqa: E402

# Sizes around the kernel's block (partial last block, exactly one, one element) and a slice of
# a flat buffer that starts at an odd offset, as the flat gradients' slices do.
KERNEL_CHECK = """
import sys, torch
sys.path.insert(0, sys.argv[1])
import grad_accumulate as g
device = sys.argv[2]
torch.manual_seed(0)
for n in (1, 4095, 4096, 3 * 4096 + 17):
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        flat = torch.randn(n + 5, dtype=torch.float32, device=device)
        before = flat.clone()
        acc, grad = flat[3:3 + n], torch.randn(n, dtype=dtype, device=device)
        expected = acc.clone().add_(grad)
        g.triton_accumulate(acc, grad)
        assert torch.equal(acc, expected), (n, dtype)
        # only the slice's elements are written: its neighbours in the flat buffer keep theirs
        assert torch.equal(flat[:3], before[:3]) and torch.equal(flat[3 + n:], before[3 + n:])
print("ok")
"""


def test_triton_kernel_adds_exactly_what_add_does():
    pytest.importorskip("triton")
    gpu = torch.cuda.is_available()
    env = dict(os.environ)
    if not gpu:
        env["TRITON_INTERPRET"] = "1"  # read when the kernel is defined: a fresh interpreter
    out = subprocess.run([sys.executable, "-c", KERNEL_CHECK, str(SCRIPTS), "cuda" if gpu else "cpu"],
                         env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_cpu_tensors_take_add(monkeypatch):
    called = []
    monkeypatch.setattr(grad_accumulate, "triton_accumulate", lambda *a: called.append(a))
    acc = torch.zeros(6)
    grad = torch.arange(6, dtype=torch.bfloat16).reshape(2, 3)
    grad_accumulate.accumulate(acc, grad)
    assert called == [] and acc.tolist() == [0, 1, 2, 3, 4, 5]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (runs on the GPU machines)")
def test_cuda_slices_of_the_flat_gradients_take_the_kernel(monkeypatch):
    pytest.importorskip("triton")
    flat = torch.zeros(4096 * 3, device="cuda")
    grad = torch.randn(64, 64, dtype=torch.bfloat16, device="cuda")
    assert grad_accumulate.kernel_applies(flat[16:16 + grad.numel()], grad)
    called = []
    real = grad_accumulate.triton_accumulate
    monkeypatch.setattr(grad_accumulate, "triton_accumulate", lambda a, g: (called.append(1), real(a, g)))
    grad_accumulate.accumulate(flat[16:16 + grad.numel()], grad)
    assert called == [1] and torch.equal(flat[16:16 + grad.numel()], grad.float().reshape(-1))
    # Where the sum would not be bitwise add_'s (fp64) or the layout does not fit: add_.
    assert not grad_accumulate.kernel_applies(flat[:grad.numel()], grad.double())
    assert not grad_accumulate.kernel_applies(flat[:grad.numel()], grad.t())
    assert not grad_accumulate.kernel_applies(flat[:grad.numel()].cpu(), grad)
