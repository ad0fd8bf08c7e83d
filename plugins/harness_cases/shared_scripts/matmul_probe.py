"""The device's achievable dense matmul rate through torch: a short probe certification runs
before it trusts a vendor's declared peak (``device_peak_flops``).

``python -I matmul_probe.py --device cuda --dtype bf16 --seconds 1.5 [--import torch_npu]
[--fp32-precision high]`` prints one line ``{"flops_per_s": ..., "n": ..., ...}``: the best rate
of several timed windows of ``n x n`` matmuls (2n^3 FLOPs each), on one device, after a
warm-up. The best window, so a neighbour's load lowers the figure rather than raising it.
torch only (the torch-based frameworks use it).
"""

import argparse
import importlib
import json
import time

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp8": "bfloat16"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", required=True)
    parser.add_argument("--dtype", default="fp32", choices=sorted(DTYPES))
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--size", type=int, default=0, help="matrix size; 0: 1024 on cpu, 8192 else")
    parser.add_argument("--import", dest="modules", action="append", default=[])
    parser.add_argument("--fp32-precision", default="highest")
    args = parser.parse_args()
    for name in args.modules:
        importlib.import_module(name)
    import torch

    torch.set_float32_matmul_precision(args.fp32_precision)
    device = torch.device(args.device, 0) if args.device != "cpu" else torch.device("cpu")
    module = torch.get_device_module(args.device) if args.device != "cpu" else None
    n = args.size or (1024 if args.device == "cpu" else 8192)
    dtype = getattr(torch, DTYPES[args.dtype])
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)

    def sync():
        if module is not None:
            module.synchronize()

    def window(calls: int) -> float:
        sync()
        start = time.perf_counter()
        for _ in range(calls):
            torch.mm(a, b)
        sync()
        return time.perf_counter() - start

    window(2)  # warm-up: kernels chosen, caches filled
    per_call = max(window(3) / 3, 1e-6)
    calls = max(1, int(args.seconds / 5 / per_call))
    best = min(window(calls) for _ in range(5))
    print(json.dumps({"flops_per_s": 2 * n ** 3 * calls / best, "n": n, "dtype": str(dtype),
                      "device": str(device), "calls": calls, "torch": torch.__version__}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
