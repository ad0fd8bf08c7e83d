"""Pieces of a GPT block's step on one CUDA GPU, timed alone: what the bias epilogue of the
forward matrix products costs, and what the compiled GeLU costs written in two equal forms.

Run from the repository root on a machine with an NVIDIA GPU::

    python benchmarks/bench_gpt_block_pieces.py --model gpt3_1.3B --micro-batch 16

1. The block's four forward products (QKV, attention output, MLP in and out) at the case's
   shapes and ``--micro-batch`` sequences of the case's length, bf16: with the bias in cuBLAS's
   epilogue (``addmm``, what ``F.linear`` runs) and without (``mm``; the bias is then added by
   the compiled elementwise kernel that follows anyway: GeLU, or the residual add).
2. The MLP's bias + tanh-GeLU, forward and backward (with the bias gradient), compiled by
   Inductor: as ``F.gelu(approximate="tanh")``, and as the same function written
   ``x * sigmoid(2 z)`` (0.5 (1 + tanh z) = sigmoid(2 z)), an exponential instead of ``tanh``;
   also the first form with Inductor's coordinate-descent tuning of its kernels. (Call 3
   of 2026-11-26 also timed hand-written Triton kernels for it, commit 78e10e5: slower, removed.)

Times are CUDA-event medians over ``--repeats`` after three warm-up repeats. Prints one line a
variant and, with ``--json-out``, writes them.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "plugins")]
from cuda_timing import gpt_shape_arguments, median_ms, write_rows  # noqa: E402
from harness_cases.gpt_cases import GPT3_SIZES, gpt3_case  # noqa: E402

def gelu_tanh(x, bias):
    return F.gelu(x + bias.to(x.dtype), approximate="tanh")


def gelu_tanh_as_sigmoid(x, bias):
    u = (x + bias.to(x.dtype)).float()
    return (u * torch.sigmoid(2 * math.sqrt(2 / math.pi) * (u + 0.044715 * u * u * u))).to(x.dtype)


def main() -> None:
    args = gpt_shape_arguments(__doc__.split("\n\n")[0], "bench_gpt_block_pieces.py", GPT3_SIZES)
    p = gpt3_case(args.model).params
    h, ffn, tokens = p["hidden_size"], p["ffn_multiplier"] * p["hidden_size"], args.micro_batch * p["seq_len"]
    device, dtype = torch.device("cuda"), torch.bfloat16
    rows = []

    def record(piece: str, variant: str, ms: float, **extra) -> None:
        rows.append({"piece": piece, "variant": variant, "ms": round(ms, 3), **extra})
        print(f"{args.model} mb {args.micro_batch} {torch.cuda.get_device_name()}: {piece:28s} "
              f"{variant:34s} {ms:8.3f} ms " + " ".join(f"{k}={v}" for k, v in extra.items()), flush=True)

    for name, n_in, n_out in (("qkv", h, 3 * h), ("attention out", h, h), ("mlp in", h, ffn),
                              ("mlp out", ffn, h)):
        x = torch.randn(tokens, n_in, device=device, dtype=dtype)
        w = torch.randn(n_out, n_in, device=device, dtype=dtype) / math.sqrt(n_in)
        b = torch.randn(n_out, device=device, dtype=dtype)
        flops = 2 * tokens * n_in * n_out
        for variant, fn in (("addmm (bias epilogue)", lambda: torch.addmm(b, x, w.t())),
                            ("mm (no bias)", lambda: torch.mm(x, w.t()))):
            ms = median_ms(fn, args.repeats)
            record(f"forward product {name}", variant, ms, tflops=round(flops / ms / 1e9, 1))
        del x, w, b

    x0 = torch.randn(tokens, ffn, device=device, dtype=dtype)
    bias0 = torch.randn(ffn, device=device, dtype=torch.float32) * 0.1
    grad = torch.randn(tokens, ffn, device=device, dtype=dtype)
    reference = None
    variants = (("F.gelu tanh", gelu_tanh, {}),
                ("x * sigmoid(2z)", gelu_tanh_as_sigmoid, {}),
                ("F.gelu tanh, coordinate descent", gelu_tanh, {"coordinate_descent_tuning": True}))
    for variant, fn, options in variants:
        torch._dynamo.reset()
        compiled = torch.compile(fn, options=options or None)
        x = x0.clone().requires_grad_()
        bias = bias0.clone().requires_grad_()

        def step():
            x.grad = bias.grad = None
            compiled(x, bias).backward(grad)

        ms = median_ms(step, args.repeats)
        out = compiled(x, bias).detach().float()
        if reference is None:
            reference = out
        record("bias + GeLU fwd+bwd", variant, ms,
               max_abs_diff_vs_first=float((out - reference).abs().max()))
    write_rows(args, rows)


if __name__ == "__main__":
    main()
