"""Adding bf16 weight gradients into fp32 accumulators: PyTorch's ``add_`` against the Triton
kernel of ``plugins/harness_pytorch/scripts/grad_accumulate.py``, on one CUDA GPU.

Run from the repository root on a machine with an NVIDIA GPU::

    python benchmarks/bench_grad_accumulate.py --model gpt3_6.7B --repeats 20

One pass adds a gradient into every matrix of the model's blocks and its embedding, as one
micro-batch's backward does (slices of one flat fp32 buffer, in the flat optimizers' order).
Times are CUDA-event medians over ``--repeats`` passes after two warm-up passes; the rate counts
10 bytes a parameter (bf16 read, fp32 read and write). Prints one line a variant and, with
``--json-out``, writes them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"
sys.path[:0] = [str(PLUGINS / "harness_pytorch" / "scripts"), str(PLUGINS)]
import grad_accumulate  # noqa: E402
from harness_cases.gpt_cases import GPT3_SIZES, gpt3_case  # noqa: E402


def matrix_sizes(case: str) -> list[int]:
    """Elements of every block matrix (QKV, attention output, MLP in and out) and of the
    embedding, from the case's own parameters."""
    p = gpt3_case(case).params
    h, ffn = p["hidden_size"], p["ffn_multiplier"] * p["hidden_size"]
    return [3 * h * h, h * h, ffn * h, h * ffn] * p["num_layers"] + [p["vocab_size"] * h]


def median_ms(fn, repeats: int, warmup: int) -> float:
    """The median milliseconds of ``fn()`` on the current stream over ``repeats`` timed calls,
    after ``warmup`` untimed ones (compilation, autotuning, allocator growth)."""
    times = []
    for i in range(repeats + warmup):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append(start.elapsed_time(end))
    return statistics.median(times)


def time_pass(add, slices, grads, repeats: int) -> float:
    """Median milliseconds of one pass over every matrix."""
    def one_pass():
        for accumulator, gradient in zip(slices, grads):
            add(accumulator, gradient)
    return median_ms(one_pass, repeats, warmup=2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(GPT3_SIZES), default="gpt3_6.7B")
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench_grad_accumulate.py: needs a CUDA GPU")
    sizes = matrix_sizes(args.model)
    total = sum(sizes)
    flat = torch.zeros(total, dtype=torch.float32, device="cuda")
    slices, offset = [], 0
    for n in sizes:
        slices.append(flat[offset:offset + n])
        offset += n
    # One gradient tensor per distinct size is enough: the kernels read it, it is not changed.
    by_size = {n: torch.randn(n, dtype=torch.bfloat16, device="cuda") for n in set(sizes)}
    grads = [by_size[n] for n in sizes]
    variants = {"torch add_": lambda a, g: a.add_(g),
                "triton kernel": grad_accumulate.triton_accumulate}
    rows = []
    for name, add in variants.items():
        ms = time_pass(add, slices, grads, args.repeats)
        rows.append({"variant": name, "ms_per_pass": round(ms, 2), "parameters": total,
                     "tb_per_s": round(10 * total / (ms / 1e3) / 1e12, 2)})
        print(f"{args.model} {torch.cuda.get_device_name()}: {name:14s} {ms:8.2f} ms a pass "
              f"({total:,} parameters, {rows[-1]['tb_per_s']:.2f} TB/s at 10 bytes a parameter)")
    if args.json_out:
        args.json_out.write_text(json.dumps({"model": args.model, "device": torch.cuda.get_device_name(),
                                             "repeats": args.repeats, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
