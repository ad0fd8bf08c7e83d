"""cuBLASLt's candidate algorithms for the GPT block's matrix products, timed while the GPU runs
at its power limit (CUDA only): does another algorithm than the one cuBLAS picks do more work per
joule, and so run faster once the power cap holds the clock down?

Run from the repository root on a machine with an NVIDIA GPU::

    python benchmarks/bench_gemm_algorithms_at_power_cap.py --model gpt3_1.3B --micro-batch 16

Why: training gpt3_1.3B and gpt3_6.7B, both frameworks hold an H100 or H200 at its 700 W limit in
every sample (BENCHMARKS.md, 2026-11-26), so a step's speed is its energy divided into the cap;
cuBLAS chooses an algorithm by its speed model, not by its energy. Each product of a block
(forward, input gradient, weight gradient accumulated in fp32 as the gradient accumulation
fusion does) and of the output head is run back to back for ``--warm-s`` seconds, then timed for
``--measure-s`` seconds (CUDA events around batches of about 100 ms), first as torch runs it,
then with each of the first ``--algos`` algorithms cuBLASLt's heuristic offers. NVML gives the
energy over the timed window (``nvmlDeviceGetTotalEnergyConsumption``) and the mean SM clock. A
candidate's result must match torch's to bf16 rounding, or the row says so.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import torch

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1] / "plugins")]
import cublaslt  # noqa: E402
from cuda_timing import gpt_shape_arguments, write_rows  # noqa: E402
from harness_cases.gpt_cases import GPT3_SIZES, gpt3_case  # noqa: E402


class Product:
    """One column-major cuBLASLt product D (m x n) = op(A) op(B) [+ D], bf16 inputs, with the
    heuristic's first ``count`` algorithms."""

    def __init__(self, lt: cublaslt.CublasLt, *, transa, transb, m, n, k, a_shape, b_shape,
                 out_dtype, accumulate, count):
        self.lt, self.beta = lt, 1.0 if accumulate else 0.0
        self.desc = lt.descriptor(transa, transb)
        bf16 = cublaslt.CUDA_TYPES[torch.bfloat16]
        self.layouts = (lt.layout(bf16, *a_shape), lt.layout(bf16, *b_shape),
                        lt.layout(cublaslt.CUDA_TYPES[out_dtype], m, n, m))
        self.algos = lt.heuristics(self.desc, *self.layouts, count=count)

    def describe(self, index: int) -> str:
        return self.lt.describe(self.algos[index].algo)

    def run(self, index: int, a: torch.Tensor, b: torch.Tensor, d: torch.Tensor) -> None:
        self.lt.matmul(self.desc, self.layouts, self.algos[index].algo, a, b, d, beta=self.beta)


class PowerMeter:
    """NVML's energy counter and SM clock of the current CUDA device."""

    def __init__(self):
        import pynvml

        self.nvml = pynvml
        pynvml.nvmlInit()
        # One visible GPU on the benchmark machines: CUDA's device 0 is NVML's index 0.
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())

    def energy_mj(self) -> int:
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)

    def sm_clock(self) -> int:
        return self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)

    def power_w(self) -> float:
        return self.nvml.nvmlDeviceGetPowerUsage(self.handle) / 1000.0


def sustained(fn, meter: PowerMeter, warm_s: float, measure_s: float) -> dict:
    """``fn`` back to back: ``warm_s`` seconds untimed, then ``measure_s`` seconds in batches of
    about 100 ms; milliseconds a call, joules a call, mean SM clock and power."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    batch = 1
    while time.perf_counter() - start < warm_s:  # also sizes a batch to about 100 ms
        t0 = time.perf_counter()
        for _ in range(batch):
            fn()
        torch.cuda.synchronize()
        if time.perf_counter() - t0 < 0.05:
            batch *= 2
    calls, gpu_ms, clocks, powers = 0, 0.0, [], []
    energy_start = meter.energy_mj()
    wall_start = time.perf_counter()
    while time.perf_counter() - wall_start < measure_s:
        begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        begin.record()
        for _ in range(batch):
            fn()
        end.record()
        time.sleep(0.04)  # sample while the batch runs
        clocks.append(meter.sm_clock())
        powers.append(meter.power_w())
        end.synchronize()
        gpu_ms += begin.elapsed_time(end)
        calls += batch
    joules = (meter.energy_mj() - energy_start) / 1000.0
    return {"ms": gpu_ms / calls, "joules_per_call": joules / calls, "sm_clock_mhz": sum(clocks) / len(clocks),
            "power_w": sum(powers) / len(powers), "calls": calls}


def main() -> None:
    def add_more(parser):
        parser.add_argument("--algos", type=int, default=6, help="cuBLASLt candidates per product")
        parser.add_argument("--warm-s", type=float, default=0.5, help="untimed seconds per candidate")
        parser.add_argument("--measure-s", type=float, default=1.5, help="timed seconds per candidate")

    args = gpt_shape_arguments(__doc__.split("\n\n")[0], "bench_gemm_algorithms_at_power_cap.py",
                               GPT3_SIZES, add_more, repeats=False)
    p = gpt3_case(args.model).params
    h, tokens = p["hidden_size"], args.micro_batch * p["seq_len"]
    ffn = p["ffn_multiplier"] * h
    dev, dt = torch.device("cuda"), torch.bfloat16
    lt = cublaslt.CublasLt(dev)
    meter = PowerMeter()
    torch.manual_seed(0)
    rows = []
    linears = {"qkv": (h, 3 * h), "attention out": (h, h), "mlp in": (h, ffn), "mlp out": (ffn, h),
               "output head": (h, p["vocab_size"])}
    for name, (k, n) in linears.items():
        x = torch.randn(tokens, k, device=dev, dtype=dt)
        w = (torch.randn(n, k, device=dev) / math.sqrt(k)).to(dt)
        dy = torch.randn(tokens, n, device=dev, dtype=dt)
        y, dx = torch.empty(tokens, n, device=dev, dtype=dt), torch.empty(tokens, k, device=dev, dtype=dt)
        dw = torch.zeros(n, k, device=dev, dtype=torch.float32)
        products = {
            # Row-major Y = X W^T is column-major Y^T (n x t) = W (T of its k x n view) X^T.
            "forward": (lambda: torch.mm(x, w.t(), out=y), dict(transa=1, transb=0, m=n, n=tokens, k=k,
                        a_shape=(k, n, k), b_shape=(k, tokens, k), out_dtype=dt, accumulate=False), (w, x, y)),
            # dX = dY W: column-major dX^T (k x t) = W^T (k x n view) dY^T (n x t view).
            "input gradient": (lambda: torch.mm(dy, w, out=dx), dict(transa=0, transb=0, m=k, n=tokens, k=n,
                               a_shape=(k, n, k), b_shape=(n, tokens, n), out_dtype=dt, accumulate=False),
                               (w, dy, dx)),
            # dW += dY^T X in fp32: column-major dW^T (k x n) += X^T (k x t view) (dY^T view)^T.
            "weight gradient, fp32 accumulate": (
                lambda: torch.addmm(dw, dy.t(), x, out_dtype=torch.float32, out=dw),
                dict(transa=0, transb=1, m=k, n=n, k=tokens, a_shape=(k, tokens, k), b_shape=(n, tokens, n),
                     out_dtype=torch.float32, accumulate=True), (x, dy, dw)),
        }
        flops = 2 * tokens * k * n
        for op, (torch_fn, spec, operands) in products.items():
            product = Product(lt, count=args.algos, **spec)
            out = operands[2]
            out.zero_()  # the weight gradient accumulates into it; the others overwrite it
            torch_fn()
            expected = out.float().clone()
            candidates = [("torch", torch_fn, "cuBLAS's choice")]
            for i in range(len(product.algos)):
                candidates.append((f"lt{i}", (lambda i=i: product.run(i, *operands)), product.describe(i)))
            for label, fn, what in candidates:
                out.zero_()
                fn()
                torch.cuda.synchronize()
                error = float((out.float() - expected).abs().max() / expected.abs().max().clamp_min(1e-6))
                stats = sustained(fn, meter, args.warm_s, args.measure_s)
                row = {"linear": name, "product": op, "algorithm": label, "config": what,
                       "ms": round(stats["ms"], 4), "tflops": round(flops / stats["ms"] / 1e9, 1),
                       "tflop_per_joule": round(flops / stats["joules_per_call"] / 1e12, 3),
                       "sm_clock_mhz": round(stats["sm_clock_mhz"]), "power_w": round(stats["power_w"]),
                       "max_rel_diff": round(error, 5)}
                rows.append(row)
                print(f"{name:13s} {op:33s} {label:5s} {row['ms']:8.4f} ms {row['tflops']:6.1f} TFLOP/s "
                      f"{row['tflop_per_joule']:6.3f} TFLOP/J {row['sm_clock_mhz']:5d} MHz {row['power_w']:4d} W "
                      f"diff {error:.1e}  {what}", flush=True)
        del x, w, dy, y, dx, dw
        torch.cuda.empty_cache()
    write_rows(args, rows)


if __name__ == "__main__":
    main()
