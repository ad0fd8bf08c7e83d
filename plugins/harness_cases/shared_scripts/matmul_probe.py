"""The device's achievable dense matmul rate through the framework: a short probe certification
runs before it trusts a vendor's declared peak (``device_peak_flops``).

``python -I matmul_probe.py --framework torch --device cuda --dtype bf16 --seconds 1.5
[--import torch_npu] [--fp32-precision high]`` (``--framework`` torch, paddle or mxnet: the one
installed in the interpreter) prints one line ``{"flops_per_s": ..., "n": ..., ...}``: the best
rate of several timed windows of ``n x n`` matmuls (2n^3 FLOPs each), on one device, after a
warm-up. Standard library besides the framework.

The probe is a lower bound on what the device can do: neighbours only slow it down, so the
best window is taken. How a window is timed:

- on an accelerator, by the wall clock, with the device synchronised at both ends;
- on the CPU, where the device is the process's own threads, by the CPU time of the busiest
  thread (``/proc/self/task``): the time a neighbour's process held the core is not the
  device's. On a busy shared machine the wall clock made the same thread 2-3x slower than it
  was while it ran. Where ``/proc`` has no per-thread times, the wall clock.
"""

import argparse
import importlib
import json
import os
import time

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "fp8": "bfloat16"}


class Matmul:
    """One framework's ``n x n`` matmul on one device: ``call()`` runs one (maybe
    asynchronously), ``sync()`` waits for the device."""

    def __init__(self, call, sync, dtype, device, version):
        self.call, self.sync, self.dtype, self.device, self.version = call, sync, dtype, device, version


def torch_matmul(args, n):
    for name in args.modules:
        importlib.import_module(name)
    import torch

    torch.set_float32_matmul_precision(args.fp32_precision)
    device = torch.device(args.device, 0) if args.device != "cpu" else torch.device("cpu")
    module = torch.get_device_module(args.device) if args.device != "cpu" else None
    dtype = getattr(torch, DTYPES[args.dtype])
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    return Matmul(lambda: torch.mm(a, b), module.synchronize if module is not None else (lambda: None),
                  str(dtype), str(device), torch.__version__)


def paddle_matmul(args, n):
    for name in args.modules:
        importlib.import_module(name)
    import paddle

    paddle.set_device("cpu" if args.device == "cpu" else f"{args.device}:0")
    a = paddle.randn([n, n], dtype="float32").astype(DTYPES[args.dtype])
    b = paddle.randn([n, n], dtype="float32").astype(DTYPES[args.dtype])
    sync = (lambda: None) if args.device == "cpu" else paddle.device.synchronize  # CPU ops are eager
    return Matmul(lambda: paddle.matmul(a, b), sync, str(a.dtype), paddle.get_device(), paddle.__version__)


def mxnet_matmul(args, n):
    for name in args.modules:
        importlib.import_module(name)
    import mxnet as mx

    context = mx.cpu() if args.device == "cpu" else mx.gpu(0)
    a = mx.nd.random.normal(shape=(n, n), ctx=context).astype(DTYPES[args.dtype])
    b = mx.nd.random.normal(shape=(n, n), ctx=context).astype(DTYPES[args.dtype])
    # MXNet's engine runs operations asynchronously on every device: waitall ends a window.
    return Matmul(lambda: mx.nd.dot(a, b), mx.nd.waitall, f"mxnet.{getattr(a.dtype, '__name__', a.dtype)}",
                  str(context), mx.__version__)


FRAMEWORKS = {"torch": torch_matmul, "paddle": paddle_matmul, "mxnet": mxnet_matmul}


def thread_cpu_seconds():
    """CPU seconds each thread of this process has run so far, by thread id (``schedstat``:
    nanoseconds; else ``stat``: clock ticks); None where /proc has no per-thread times."""
    try:
        threads = os.listdir("/proc/self/task")
    except OSError:
        return None
    seconds = {}
    for thread in threads:
        try:
            with open(f"/proc/self/task/{thread}/schedstat", encoding="ascii") as handle:
                seconds[thread] = int(handle.read().split()[0]) / 1e9
        except (OSError, ValueError, IndexError):
            try:
                with open(f"/proc/self/task/{thread}/stat", encoding="ascii") as handle:
                    fields = handle.read().rsplit(")", 1)[1].split()
                seconds[thread] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, ValueError, IndexError):
                continue
    return seconds or None


def busiest_thread_seconds(before, after):
    """The most CPU time one thread ran between two ``thread_cpu_seconds`` readings."""
    if not before or not after:
        return None
    busiest = max(after[t] - before.get(t, 0.0) for t in after)
    return busiest if busiest > 0 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--framework", default="torch", choices=sorted(FRAMEWORKS))
    parser.add_argument("--device", required=True)
    parser.add_argument("--dtype", default="fp32", choices=sorted(DTYPES))
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--size", type=int, default=0, help="matrix size; 0: 1024 on cpu, 8192 else")
    parser.add_argument("--import", dest="modules", action="append", default=[])
    parser.add_argument("--fp32-precision", default="highest", help="torch only")
    args = parser.parse_args()
    n = args.size or (1024 if args.device == "cpu" else 8192)
    matmul = FRAMEWORKS[args.framework](args, n)
    by_cpu_time = args.device == "cpu" and thread_cpu_seconds() is not None

    def window(calls: int) -> float:
        matmul.sync()
        start, threads = time.perf_counter(), thread_cpu_seconds() if by_cpu_time else None
        for _ in range(calls):
            matmul.call()
        matmul.sync()
        wall = time.perf_counter() - start
        ran = busiest_thread_seconds(threads, thread_cpu_seconds()) if by_cpu_time else None
        return min(wall, ran) if ran else wall

    window(2)  # warm-up: kernels chosen, caches filled
    per_call = max(window(3) / 3, 1e-6)
    calls = max(1, int(args.seconds / 5 / per_call))
    best = min(window(calls) for _ in range(5))
    print(json.dumps({"flops_per_s": 2 * n ** 3 * calls / best, "n": n, "dtype": matmul.dtype,
                      "device": matmul.device, "calls": calls,
                      "clock": "thread_cpu" if by_cpu_time else "wall",
                      "framework": args.framework, "version": matmul.version}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
