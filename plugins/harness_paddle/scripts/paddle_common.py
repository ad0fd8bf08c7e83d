"""What the Paddle training scripts share: start, devices, distributed setup, AMP, data,
the sums behind the step lines, the end.

Paddle, numpy and the framework-neutral modules of ``harness_cases/shared_scripts`` only
(the launch puts that folder on ``PYTHONPATH``): the scripts run in the Paddle environment's
interpreter, directly or under ``python -m paddle.distributed.launch``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from contextlib import nullcontext

import paddle
import paddle.distributed as dist

from data_nonce import data_order_seed
from device_backend import read_device_backend
from memory_line import memory_line, process_peak_rss_mb
from training_knobs import AMP_LEVELS

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
    """Device, ranks and the data-parallel wrapper of one training process.

    The place comes from the vendor's device backend (its ``paddle`` entry: gpu, npu, xpu,
    cpu or a custom device type); with a device per process the launcher's
    ``FLAGS_selected_<place>s`` names this process's one.
    """

    def __init__(self, seed: int, config_path: str):
        self.world = int(os.environ.get("PADDLE_TRAINERS_NUM", "1"))
        self.rank = int(os.environ.get("PADDLE_TRAINER_ID", "0"))
        backend = read_device_backend(config_path)
        entry = backend.get("frameworks", {}).get("paddle")
        if entry is None:
            fail(f"the {backend.get('device_type')} device backend declares no paddle place")
        for module in entry.get("import_modules", []):
            __import__(module)
        self.device = entry["device_type"]
        self.dedicated = bool(backend.get("addressed_by_local_rank"))
        self.peak_memory_source = backend.get("peak_memory", "process_rss")
        place = self.device
        if self.dedicated:
            selected = os.environ.get(f"FLAGS_selected_{self.device}s",
                                      os.environ.get("PADDLE_LOCAL_RANK", "0"))
            place = f"{self.device}:{int(selected.split(',')[0])}"
        try:
            paddle.set_device(place)
        except (ValueError, RuntimeError) as exc:
            fail(f"paddle has no device {place!r} ({exc}); is the vendor's paddle plugin installed?")
        self.hybrid = None
        # One seed on every rank: replicated parameters start identical everywhere (tensor
        # parallel shards draw from fleet's own RNG tracker); ranks differ by their data.
        paddle.seed(seed)

    def init_data_parallel(self) -> None:
        if self.world > 1:
            dist.init_parallel_env()  # the launcher's backend for the place: NCCL on GPUs, gloo on CPU

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


def start_training(description: str) -> tuple[argparse.Namespace, dict, dict, Runtime]:
    """Every script's start: its arguments, (settings, params) of the resolved config and
    this process's runtime (device placed, seeded; the process group is the script's to join)."""
    args, settings, params = load_config(description)
    return args, settings, params, Runtime(settings["seed"], args.config)


def amp_setup(precision: str, device: str, level: str):
    """Return (autocast factory, grad scaler or None, level) for the precision, or exit."""
    if precision == "fp32":
        return (lambda: nullcontext()), None, "O0"
    if level == "auto":  # pure half-precision weights (O2) on accelerators, as the seeds run; O1 on CPUs
        level = "O2" if device != "cpu" else "O1"
    if level not in AMP_LEVELS:
        fail(f"amp_level must be {', '.join(AMP_LEVELS)}, got {level!r}")
    if device == "cpu" and precision == "fp16":
        fail("fp16 training needs an accelerator; on the CPU use --precision bf16 or fp32")
    if device != "cpu" and precision == "bf16" and not paddle.amp.is_bfloat16_supported():
        fail(f"bf16 is not supported on this {device} device; use --precision fp16 or fp32")
    dtype = AMP_DTYPES[precision]

    def autocast():
        return paddle.amp.auto_cast(enable=True, level=level, dtype=dtype)

    scaler = paddle.amp.GradScaler(init_loss_scaling=2.0**15) if precision == "fp16" else None
    return autocast, scaler, level


def amp_decorate(model, optimizer, level: str, precision: str):
    """(model, optimizer), at amp level O2 decorated to keep their weights in the precision's
    dtype (the optimizer keeps fp32 masters: ``multi_precision``)."""
    if level == "O2":
        model, optimizer = paddle.amp.decorate(models=model, optimizers=optimizer, level="O2",
                                               dtype=AMP_DTYPES[precision])
    return model, optimizer


def memory_fields(device: str) -> str:
    """PaddleNLP's memory fields from the device allocator (on CUDA GPUs, where Paddle's
    paddle.device.cuda reads them); elsewhere the scripts print the process's peak RSS."""
    if device == "gpu":
        allocated = paddle.device.cuda.max_memory_allocated() / 2**20
        reserved = paddle.device.cuda.max_memory_reserved() / 2**20
        return f", max_memory_allocated: {allocated:.0f} MB, max_memory_reserved: {reserved:.0f} MB"
    return ""


def finish(rt: Runtime, data=None) -> None:
    """Rank 0's last lines: on hosts without a device allocator the process's peak memory
    (on GPUs the step lines carry the allocator's figures, ``memory_fields``), then the end.
    ``data``: the run's batches, closed first when they are a loader's (``ShuffledBatches``)."""
    if isinstance(data, ShuffledBatches):
        data.close()
    if rt.rank == 0:
        if rt.device != "gpu":
            log("> " + memory_line(process_peak_rss_mb(), "process max RSS, rank 0"))
        log("> training finished")


def backward_and_step(loss, optimizer, scaler, micro_last: bool, before_step=None):
    """Backward of one micro-batch; on the last micro-batch an optimizer step, after
    ``before_step()`` when given (which sees the step's gradients)."""
    if scaler is not None:
        scaler.scale(loss).backward()
        if micro_last:
            if before_step is not None:
                before_step()
            scaler.step(optimizer)
            scaler.update()
            optimizer.clear_grad(set_to_zero=False)
    else:
        loss.backward()
        if micro_last:
            if before_step is not None:
                before_step()
            optimizer.step()
            optimizer.clear_grad(set_to_zero=False)


class EndlessBatches:
    """The distributed batch sampler's batches epoch after epoch without end, its order
    reshuffled each epoch (``set_epoch``); with ``epoch_keys`` each index comes as
    ``(epoch, index)``, for datasets that draw an image's augmentation from its key.

    One endless pass, so the loader starts its worker processes once: a pass per epoch
    started a new set of workers at every epoch boundary (a few steps apart on a small
    dataset), and the device waited for them at each.
    """

    def __init__(self, sampler: paddle.io.DistributedBatchSampler, epoch_keys: bool = False):
        self.sampler, self.epoch_keys = sampler, epoch_keys

    def __iter__(self):
        for epoch in itertools.count():
            self.sampler.set_epoch(data_order_seed(epoch))  # the repeat's nonce in the shuffle
            for batch in self.sampler:
                yield [(epoch, index) for index in batch] if self.epoch_keys else batch


def equivalence_batches(equivalence, dataset, batch_size: int, seed: int, collate):
    """``harness equivalence``'s sample order (the same in every framework) as
    ``ShuffledBatches`` gives batches: ``(epoch, batch_index, collate(samples))``."""
    per_epoch = len(dataset) // batch_size
    for count, indices in enumerate(equivalence.batches(len(dataset), batch_size, seed)):
        epoch, index = divmod(count, per_epoch)
        yield epoch, index, collate([dataset[int(i)] for i in indices])


def stack_samples(samples) -> list:
    """Samples (tuples of numpy arrays) stacked field by field into paddle tensors."""
    import numpy as np

    return [paddle.to_tensor(np.stack(field)) for field in zip(*samples)]


class ShuffledBatches:
    """An endless loader's batches as ``(epoch, batch_index, batch)``; the loader yields
    them in the sampler's order, so the count tells epoch and index."""

    def __init__(self, loader, batches_per_epoch: int):
        self.batches, self.batches_per_epoch = iter(loader), batches_per_epoch
        self.count = 0

    def __iter__(self):
        return self

    def __next__(self):
        epoch, index = divmod(self.count, self.batches_per_epoch)
        self.count += 1
        return epoch, index, next(self.batches)

    def close(self) -> None:
        """Stop the loader's workers and the thread that feeds its queue now, while the
        interpreter is whole. Left to the interpreter's exit, that daemon thread can still be
        filling the queue when the C++ runtime goes, which aborts the finished process
        ("terminate called without an active exception", SIGABRT; Paddle's own dataloader_iter
        notes it). ``_try_shutdown_all`` is what the iterator's ``__del__`` calls."""
        shutdown = getattr(self.batches, "_try_shutdown_all", None)
        if shutdown is not None:
            shutdown()
        thread = getattr(self.batches, "_thread", None)
        if thread is not None:
            thread.join(timeout=10)


def shuffled_batches(rt: Runtime, dataset, batch_size: int, workers: int,
                     epoch_keys: bool = False) -> ShuffledBatches:
    """Endless batches (``EndlessBatches``) of this process's data-parallel share of
    ``dataset``, reshuffled each epoch; loader workers feed an accelerator, a shared host
    reads in-process."""
    sampler = paddle.io.DistributedBatchSampler(dataset, batch_size=batch_size,
                                                num_replicas=rt.data_parallel_world(),
                                                rank=rt.data_parallel_rank(), shuffle=True, drop_last=True)
    if len(sampler) == 0:
        fail(f"{len(dataset)} samples make no batch of {batch_size} for each of "
             f"{rt.data_parallel_world()} data-parallel processes; use a smaller micro batch size")
    loader = paddle.io.DataLoader(dataset, batch_sampler=EndlessBatches(sampler, epoch_keys),
                                  num_workers=workers if rt.dedicated else 0)
    return ShuffledBatches(loader, len(sampler))


class IntervalMeter:
    """The sums behind a step line: PaddleNLP's and PaddleClas's lines report the averages of
    the ``interval`` steps since the last line (of fewer at the end of the run)."""

    def __init__(self, rt: Runtime, interval: int, max_steps: int):
        self.rt, self.interval, self.max_steps = rt, max(1, int(interval)), max_steps
        self.reader_cost = self.batch_cost = self.loss = 0.0
        self.tick = time.perf_counter()  # the first step's batch cost runs from here

    def next_batch(self, data):
        """The next item of ``data``; the wait counts as reader cost."""
        start = time.perf_counter()
        item = next(data)
        self.reader_cost += time.perf_counter() - start
        return item

    def end_step(self, step: int) -> int:
        """Close the step's batch cost; return how many steps a line at ``step`` averages,
        0 when no line is due."""
        self.batch_cost += time.perf_counter() - self.tick
        self.tick = time.perf_counter()
        if step % self.interval == 0:
            return self.interval
        return step % self.interval if step == self.max_steps else 0

    def mean_loss(self, steps: int, step: int) -> float:
        """The mean loss of the last ``steps`` steps over the ranks (collective); a non-finite
        one ends the run, exit 1."""
        value = self.rt.all_mean(self.loss / steps)
        if not math.isfinite(value):
            fail(f"non-finite loss {value} at step {step}", code=1)
        return value

    def reset(self) -> None:
        self.reader_cost = self.batch_cost = self.loss = 0.0
