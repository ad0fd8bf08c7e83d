"""Shared by the benchmarks of single kernels: their timing by CUDA events and their command line."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch


def median_ms(fn, repeats: int, warmup: int = 3) -> float:
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


def gpt_shape_arguments(description: str, script: str, models, add_more=None,
                        repeats: bool = True) -> argparse.Namespace:
    """The command line of a benchmark timed at one GPT case's shapes (``--model``,
    ``--micro-batch``, ``--repeats`` unless ``repeats`` is false, ``--json-out``, and what
    ``add_more(parser)`` adds); exits unless a CUDA GPU is present."""
    parser = argparse.ArgumentParser(description=description)
    if add_more is not None:
        add_more(parser)
    parser.add_argument("--model", choices=sorted(models), default="gpt3_1.3B")
    parser.add_argument("--micro-batch", type=int, default=16, help="sequences of the case's length")
    if repeats:
        parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit(f"{script}: needs a CUDA GPU")
    return args


def write_rows(args: argparse.Namespace, rows: list[dict]) -> None:
    """Write the measured ``rows`` with the case, micro batch, GPU and torch to ``--json-out``."""
    if args.json_out:
        args.json_out.write_text(json.dumps({"model": args.model, "micro_batch": args.micro_batch,
                                             "device": torch.cuda.get_device_name(),
                                             "torch": torch.__version__, "rows": rows}, indent=1) + "\n")
