"""The MLP's GeLU in cuBLASLt's epilogues against a product and Inductor's GeLU kernels, on one
CUDA GPU (``benchmarks/cublaslt_gelu.py``: measured slower on an H200 on 2026-11-26, so not used
by the PyTorch plugin).

Run from the repository root on a machine with an NVIDIA GPU::

    python benchmarks/bench_mlp_gelu_epilogue.py --model gpt3_1.3B --micro-batch 16

Forward: ``addmm`` (bias epilogue) then the compiled tanh-GeLU, against one product with the
``GELU_AUX_BIAS`` epilogue. Backward: the next linear's input-gradient product then the compiled
GeLU backward with the bias gradient, against one product with the ``DGELU_BGRAD`` epilogue.
CUDA-event medians over ``--repeats`` after three warm-up repeats; the largest differences
between the two ways' results are printed beside the times.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "plugins")]
import cublaslt_gelu  # noqa: E402
from cuda_timing import gpt_shape_arguments, median_ms, write_rows  # noqa: E402
from harness_cases.gpt_cases import GPT3_SIZES, gpt3_case  # noqa: E402


def main() -> None:
    args = gpt_shape_arguments(__doc__.split("\n\n")[0], "bench_mlp_gelu_epilogue.py", GPT3_SIZES)
    p = gpt3_case(args.model).params
    h, n, tokens = p["hidden_size"], p["ffn_multiplier"] * p["hidden_size"], args.micro_batch * p["seq_len"]
    dev, dt = torch.device("cuda"), torch.bfloat16
    torch.manual_seed(0)
    x = torch.randn(tokens, h, device=dev, dtype=dt)
    w1 = (torch.randn(n, h, device=dev) / math.sqrt(h)).to(dt)
    b1 = (torch.randn(n, device=dev) * 0.1).to(dt)
    w2 = (torch.randn(h, n, device=dev) / math.sqrt(n)).to(dt)
    g = torch.randn(tokens, h, device=dev, dtype=dt)
    gelu = torch.compile(lambda t: F.gelu(t, approximate="tanh"))

    @torch.compile
    def gelu_backward(dy, pre):
        d = torch.ops.aten.gelu_backward(dy, pre, approximate="tanh")
        return d, d.float().sum(0)

    lt = cublaslt_gelu.CublasLt(dev)
    rows = []

    def record(name, ms, **extra):
        rows.append({"piece": name, "ms": round(ms, 3), **extra})
        print(f"{args.model} mb {args.micro_batch} {torch.cuda.get_device_name()}: {name:48s} {ms:8.3f} ms "
              + " ".join(f"{k}={v}" for k, v in extra.items()), flush=True)

    pre = torch.addmm(b1, x, w1.t())
    y_ref = gelu(pre)
    y, aux = lt.linear_gelu(x, w1, b1)
    record("forward: addmm + compiled GeLU", median_ms(lambda: gelu(torch.addmm(b1, x, w1.t())), args.repeats))
    record("forward: cuBLASLt GELU_AUX_BIAS", median_ms(lambda: lt.linear_gelu(x, w1, b1), args.repeats),
           max_diff_out=float((y.float() - y_ref.float()).abs().max()),
           max_diff_aux=float((aux.float() - pre.float()).abs().max()))
    record("forward: addmm alone", median_ms(lambda: torch.addmm(b1, x, w1.t()), args.repeats))
    d_ref, db_ref = gelu_backward(g @ w2, pre)
    d, db = lt.dgelu_product(g, w2, aux)
    record("backward: mm + compiled GeLU backward + bias sum",
           median_ms(lambda: gelu_backward(g @ w2, pre), args.repeats))
    record("backward: cuBLASLt DGELU_BGRAD", median_ms(lambda: lt.dgelu_product(g, w2, aux), args.repeats),
           max_diff_grad=float((d.float() - d_ref.float()).abs().max()),
           max_rel_diff_bias_grad=float(((db.float() - db_ref).abs() / db_ref.abs().clamp_min(1e-3)).max()))
    record("backward: mm alone", median_ms(lambda: g @ w2, args.repeats))
    write_rows(args, rows)


if __name__ == "__main__":
    main()
