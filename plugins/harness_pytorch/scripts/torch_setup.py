"""Start-up shared by the PyTorch training scripts: the resolved config, device and process group."""

from __future__ import annotations

import json
import os
import resource
import sys
from dataclasses import dataclass
from typing import Callable

import torch
import torch.distributed as dist


@dataclass(frozen=True)
class Runtime:
    device: torch.device
    world: int
    rank: int


def read_config(path: str) -> tuple[dict, dict]:
    """(settings, params) of the resolved config harness wrote for this run."""
    with open(path, encoding="utf-8") as handle:
        config = json.load(handle)
    return config["settings"], config["params"]


def start_runtime(seed: int) -> Runtime:
    """Pick this rank's device (torchrun sets WORLD_SIZE/RANK/LOCAL_RANK), join the process
    group when there are several ranks (NCCL on GPUs, gloo on CPUs) and seed torch."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if torch.cuda.is_available():
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
        torch.cuda.set_device(device)
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
    else:
        device = torch.device("cpu")
    if world > 1:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    torch.manual_seed(seed)
    return Runtime(device=device, world=world, rank=rank)


def run_and_exit(main: Callable[[], int]) -> None:
    """Run ``main`` and exit with its code, skipping the interpreter's teardown: there, torch
    2.13's gloo threads are destroyed in an order that intermittently aborts a finished rank
    ("terminate called without an active exception", SIGABRT) and fails a completed run."""
    exit_code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(exit_code)


def peak_memory_mb(device: torch.device, world: int = 1) -> tuple[float, str]:
    """This run's peak memory in MiB, the max over ranks, and what it measures: the framework's
    allocator peak on a GPU, the process's peak resident memory on the CPU. Collective when
    ``world > 1``: every rank calls it."""
    if device.type == "cuda":
        peak, source = torch.cuda.max_memory_allocated(device) / 2**20, "cuda max allocated"
    else:  # ru_maxrss is in KiB on Linux
        peak, source = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "process max RSS"
    if world > 1:
        reduced = torch.tensor([peak], device=device)
        dist.all_reduce(reduced, op=dist.ReduceOp.MAX)
        peak = float(reduced)
    return peak, source


def peak_memory_line(device: torch.device, world: int = 1) -> str:
    """The peak-memory line harness's parsers read (Megatron style), for every script."""
    peak, source = peak_memory_mb(device, world)
    return f"peak memory (MB): {peak:.1f} ({source}, max over ranks)"
