"""The MLP's bias + GeLU kernels (bias_gelu.py): forward, input gradient and bias gradient within
one unit in the last place of the exact (float64) result (run on the CPU through Triton's
interpreter with IEEE division; on a GPU machine the same test runs the kernels with the fast
reciprocal), and the dispatch falls back to PyTorch where the kernels do not apply."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from tests.plugins.harness_pytorch.flat_optimizers import SCRIPTS  # noqa: E402  (scripts on sys.path)
import bias_gelu  # noqa: E402

# Shapes around the kernels' 32 x 256 tile (one element, partial tiles in both directions,
# whole tiles, a 3-D activation), bf16 and fp16 activations, an fp32 bias (the model's biases
# stay fp32).
KERNEL_CHECK = """
import sys, torch
import torch.nn.functional as F
sys.path.insert(0, sys.argv[1])
import bias_gelu as k
device, fast = sys.argv[2], sys.argv[2] == "cuda"
torch.manual_seed(0)
MANTISSA = {torch.bfloat16: 7, torch.float16: 10}

def within_one_ulp(got, exact, dtype, what):
    ulp = 2.0 ** (torch.floor(torch.log2(exact.abs().clamp_min(2.0 ** -14))) - MANTISSA[dtype])
    worst = ((got.double() - exact).abs() / ulp).max().item()
    assert worst <= 1.0, (what, dtype, tuple(exact.shape), worst)

for shape in ((1, 1), (33, 257), (64, 512), (2, 35, 300)):
    for dtype in (torch.bfloat16, torch.float16):
        x = (torch.randn(shape, device=device) * 2).to(dtype)
        b = torch.randn(shape[-1], device=device) * 0.5
        g = torch.randn(shape, device=device).to(dtype)
        # The reference in float64: fp32's tanh loses the small negative outputs' digits.
        xr, br = x.double().requires_grad_(), b.double().requires_grad_()
        exact = F.gelu(xr + br, approximate="tanh")
        exact.backward(g.double())
        within_one_ulp(k.triton_forward(x, b, fast=fast), exact.detach(), dtype, "forward")
        grad_x, grad_b = k.triton_backward(g, x, b, fast=fast)
        within_one_ulp(grad_x, xr.grad, dtype, "input gradient")
        assert grad_b.dtype == torch.float32
        torch.testing.assert_close(grad_b.double(), br.grad, rtol=2e-3, atol=2e-3 * shape[0])
print("ok")
"""


def test_kernels_agree_with_pytorch_to_one_ulp():
    pytest.importorskip("triton")
    gpu = torch.cuda.is_available()
    env = dict(os.environ)
    if not gpu:
        env["TRITON_INTERPRET"] = "1"  # read when the kernels are defined: a fresh interpreter
    out = subprocess.run([sys.executable, "-c", KERNEL_CHECK, str(SCRIPTS), "cuda" if gpu else "cpu"],
                         env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


def test_cpu_tensors_take_pytorch():
    x = torch.randn(4, 6, dtype=torch.bfloat16, requires_grad=True)
    b = torch.randn(6, requires_grad=True)
    assert not bias_gelu.kernel_applies(x, b)
    y = bias_gelu.bias_gelu(x, b)
    assert torch.equal(y, torch.nn.functional.gelu(x + b.to(x.dtype), approximate="tanh"))
    y.sum().backward()
    assert b.grad.dtype == torch.float32 and x.grad.shape == x.shape
    assert torch.equal(bias_gelu.bias_gelu(x, None), torch.nn.functional.gelu(x, approximate="tanh"))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (runs on the GPU machines)")
def test_cuda_compiled_operator_matches_pytorch():
    pytest.importorskip("triton")
    import torch._dynamo.testing

    torch.manual_seed(0)
    x = torch.randn(3, 40, 300, device="cuda").to(torch.bfloat16).requires_grad_()
    b = torch.randn(300, device="cuda", requires_grad=True)
    assert bias_gelu.kernel_applies(x, b)
    counter = torch._dynamo.testing.CompileCounter()
    y = torch.compile(bias_gelu.bias_gelu, backend=counter, fullgraph=True)(x, b)
    assert counter.frame_count == 1  # one graph: the operator does not break it
    y.float().square().sum().backward()
    xr, br = x.detach().float().requires_grad_(), b.detach().clone().requires_grad_()
    yr = torch.nn.functional.gelu(xr + br, approximate="tanh")
    (yr.square().sum()).backward()
    torch.testing.assert_close(y.float(), yr, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(x.grad.float(), xr.grad, rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(b.grad, br.grad, rtol=2e-2, atol=0.5)
    # Where the kernels do not fit: PyTorch.
    assert not bias_gelu.kernel_applies(x.detach().float(), b)
    assert not bias_gelu.kernel_applies(x.detach().transpose(1, 2), b[:40])
