"""What the Paddle training scripts share: config, devices, distributed setup, AMP, schedule.

Standalone (paddle and numpy only): the scripts run in the Paddle environment's interpreter,
directly or under ``python -m paddle.distributed.launch``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from contextlib import nullcontext

import paddle
import paddle.distributed as dist

AMP_DTYPES = {"fp16": "float16", "bf16": "bfloat16"}


def log(msg: str) -> None:
    print(msg, flush=True)


def fail(msg: str, code: int = 2) -> None:
    log(f"error: {msg}")
    sys.exit(code)


def load_config(description: str) -> tuple[argparse.Namespace, dict, dict]:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--config", required=True, help="resolved config JSON written by harness")
    parser.add_argument("--data", required=True, help="dataset path (prefix, file or folder)")
    parser.add_argument("--parallel", default="{}", help="JSON of the hybrid-parallel layout")
    args = parser.parse_args()
    with open(args.config, encoding="utf-8") as handle:
        cfg = json.load(handle)
    return args, cfg["settings"], cfg["params"]


class Runtime:
    """Device, ranks and the data-parallel wrapper of one training process."""

    def __init__(self, seed: int):
        self.world = int(os.environ.get("PADDLE_TRAINERS_NUM", "1"))
        self.rank = int(os.environ.get("PADDLE_TRAINER_ID", "0"))
        on_gpu = paddle.device.is_compiled_with_cuda() and paddle.device.cuda.device_count() > 0
        self.device = "gpu" if on_gpu else "cpu"
        if on_gpu:
            paddle.set_device(f"gpu:{int(os.environ.get('FLAGS_selected_gpus', '0').split(',')[0])}")
        else:
            paddle.set_device("cpu")
        self.hybrid = None
        # One seed on every rank: replicated parameters start identical everywhere (tensor
        # parallel shards draw from fleet's own RNG tracker); ranks differ by their data.
        paddle.seed(seed)

    def init_data_parallel(self) -> None:
        if self.world > 1:
            dist.init_parallel_env()  # NCCL on GPUs, gloo on CPU

    def data_parallel_world(self) -> int:
        """Processes that read different data: data parallel x sharding ranks."""
        if self.hybrid is None:
            return self.world
        return self.hybrid.get_data_parallel_world_size() * self.hybrid.get_sharding_parallel_world_size()

    def data_parallel_rank(self) -> int:
        if self.hybrid is None:
            return self.rank
        return (self.hybrid.get_data_parallel_rank() * self.hybrid.get_sharding_parallel_world_size()
                + self.hybrid.get_sharding_parallel_rank())

    def wrap(self, model):
        return paddle.DataParallel(model) if self.world > 1 and self.hybrid is None else model

    def all_mean(self, value: float) -> float:
        if self.world == 1:
            return value
        tensor = paddle.to_tensor([value], dtype="float32")
        dist.all_reduce(tensor)
        return float(tensor.item()) / self.world

    def no_sync(self, model, last_micro: bool):
        return model.no_sync() if (self.world > 1 and not last_micro and hasattr(model, "no_sync")) \
            else nullcontext()


def amp_setup(precision: str, device: str, level: str):
    """Return (autocast factory, grad scaler or None, level) for the precision, or exit."""
    if precision == "fp32":
        return (lambda: nullcontext()), None, "O0"
    if level == "auto":  # pure half-precision weights (O2) on GPUs, as the seeds run; O1 on CPUs
        level = "O2" if device == "gpu" else "O1"
    if level not in ("O1", "O2"):
        fail(f"amp_level must be auto, O1 or O2, got {level!r}")
    if device == "cpu" and precision == "fp16":
        fail("fp16 training needs a GPU; on the CPU use --precision bf16 or fp32")
    if device == "gpu" and precision == "bf16" and not paddle.amp.is_bfloat16_supported():
        fail("bf16 is not supported on this GPU; use --precision fp16 or fp32")
    dtype = AMP_DTYPES[precision]

    def autocast():
        return paddle.amp.auto_cast(enable=True, level=level, dtype=dtype)

    scaler = paddle.amp.GradScaler(init_loss_scaling=2.0**15) if precision == "fp16" else None
    return autocast, scaler, level


def memory_fields(device: str) -> str:
    """PaddleNLP's memory fields on GPUs; on the CPU the process's peak RSS (its own name)."""
    if device == "gpu":
        allocated = paddle.device.cuda.max_memory_allocated() / 2**20
        reserved = paddle.device.cuda.max_memory_reserved() / 2**20
        return f", max_memory_allocated: {allocated:.0f} MB, max_memory_reserved: {reserved:.0f} MB"
    return ""


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def backward_and_step(loss, optimizer, scaler, micro_last: bool):
    """Backward of one micro-batch; on the last micro-batch an optimizer step."""
    if scaler is not None:
        scaler.scale(loss).backward()
        if micro_last:
            scaler.step(optimizer)
            scaler.update()
            optimizer.clear_grad(set_to_zero=False)
    else:
        loss.backward()
        if micro_last:
            optimizer.step()
            optimizer.clear_grad(set_to_zero=False)


def endless(loader, sampler=None):
    """Batches of a loader forever, reshuffling each epoch; yields (epoch, batch_index, batch)."""
    epoch = 0
    while True:
        if sampler is not None and hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        for index, batch in enumerate(loader):
            yield epoch, index, batch
        epoch += 1
