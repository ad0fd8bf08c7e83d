"""Image classification training with PyTorch (ResNet-50 v1.5, MobileNetV1; no torchvision).

SGD with momentum, linear warm-up then cosine decay, on the uint8 image records; data
parallel under ``python -m torch.distributed.run`` (with the collective backend the vendor declares: gloo on CPUs, NCCL on GPUs). Prints the
DLLogger lines of NVIDIA's NGC PyTorch ResNet-50 (``*_ips`` are for the whole job)::

    DLL 2026-01-01 10:00:00.000000 - Epoch: 0 Iteration: 2  train.loss : 2.30 None
        train.compute_ips : 300.1 images/s train.total_ips : 290.4 images/s train.lr : 0.1
"""

from __future__ import annotations

import argparse
import itertools
import math
import time
from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch.utils.data import BatchSampler, DataLoader, Dataset, DistributedSampler, Sampler

from cnn_models import build_model, trainable_parameters
from dll import dll
from lr_schedule import lr_at
from data_nonce import data_order_seed
from readback import print_readback
from step_profile import StepProfiler
from torch_setup import (backward, compiled, data_parallel, finish_training, mean_over_ranks, optimizer_step,
                         run_and_exit, start_training)
from image_records import MEAN, STD, ImageRecords, augmentation_rng, equivalence_batches
from equivalence import Equivalence, positional_names
import torch_equivalence

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def log(msg: str) -> None:
    print(msg, flush=True)


class RecordBatches(Dataset):
    """Whole augmented batches of the image records, one ``__getitem__`` per batch.

    A key is ``(epoch, number, indices)`` (``EpochBatches``); the batch's crops and flips
    are drawn from ``augmentation_rng(seed, epoch, number)``: loader workers are forked copies
    of this object, and a generator held here would repeat itself in every worker
    (``image_records``). Seeding from the batch's position also makes the augmentation
    independent of the worker count.
    """

    def __init__(self, folder: str, seed: int):
        self.records = ImageRecords(folder, seed)
        self.seed = seed

    def __len__(self):
        return len(self.records)

    def __getitem__(self, key):
        epoch, number, indices = key
        rng = augmentation_rng(self.seed, epoch, number)
        # uint8, normalised on the device (normalise_on_device): the workers only crop and flip.
        images, labels = self.records.batch_uint8(indices, rng)
        return torch.from_numpy(images), torch.from_numpy(labels)


class EpochBatches(Sampler):
    """Batches of the distributed sampler's indices (its drop_last and per-epoch shuffle),
    epoch after epoch without end, each keyed by its epoch and its number in that epoch.

    One endless pass, so the loader never starts a new iterator at an epoch boundary: its
    workers keep prefetching across the boundary instead of the device waiting for the new
    epoch's first batch.
    """

    def __init__(self, sampler: DistributedSampler, batch_size: int):
        self.sampler = sampler
        self.batches = BatchSampler(sampler, batch_size, drop_last=True)
        if len(self.batches) == 0:
            raise ValueError(f"{len(sampler)} images per process, fewer than one batch of {batch_size}")

    def batches_per_epoch(self) -> int:
        return len(self.batches)

    def __iter__(self):
        for epoch in itertools.count():
            self.sampler.set_epoch(epoch)
            for number, indices in enumerate(self.batches):
                yield epoch, number, indices


def batch_loader(dataset: RecordBatches, sampler: DistributedSampler, batch_size: int, **options) -> DataLoader:
    """An endless loader (``EpochBatches``) whose workers each build whole batches
    (``batch_size=None``: no per-sample calls and no collation)."""
    return DataLoader(dataset, batch_size=None, sampler=EpochBatches(sampler, batch_size), **options)


def normalise_on_device(device: torch.device):
    """uint8 CHW batches to float32 with ImageNet's per-channel mean and deviation, as
    ``image_records.normalise`` computes them on the host."""
    mean = torch.from_numpy(MEAN).to(device).unsqueeze(0)
    std = torch.from_numpy(STD).to(device).unsqueeze(0)
    return lambda images: (images.float() - mean) / std


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True)
    parser.add_argument("--data", required=True, help="folder of the uint8 image records")
    parser.add_argument("--model", required=True, choices=["resnet50", "mobilenet_v1"])
    args = parser.parse_args()
    s, p, runtime = start_training(args.config)
    device, world, rank = runtime.device, runtime.world, runtime.rank
    precision = s["precision"]
    model = build_model(args.model, p["num_classes"], p["width_multiplier"]).to(device)
    memory_format = torch.channels_last if p.get("channels_last") else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    n_params = trainable_parameters(model)
    # L2 decay on every parameter, as Paddle's L2Decay regulariser and Gluon's wd do. Not the
    # fused SGD kernel: under the fp16 loss scaler torch 2.11's fused SGD advanced the momentum
    # on overflow steps the scaler skips, and ResNet-50/MobileNetV1 went to nan within a few
    # steps on an H100; in fp32 it was no faster.
    optimizer = torch.optim.SGD(model.parameters(), lr=p["learning_rate"], momentum=p["momentum"],
                                weight_decay=p["weight_decay"])
    forward = compiled(model, p)
    if world > 1:
        forward = data_parallel(forward, runtime, p.get("grad_allreduce", "fp32"), s["grad_accum_steps"],
                                p.get("grad_sync", "ddp"), p.get("compile_mode", "default"))
    mbs, accum = s["micro_batch_size"], s["grad_accum_steps"]
    global_batch = mbs * accum * world
    dataset = RecordBatches(args.data, s["seed"] + rank)
    if dataset.records.image_size != p["image_size"] or dataset.records.num_classes != p["num_classes"]:
        log(f"error: {args.data} holds {dataset.records.image_size}px images of "
            f"{dataset.records.num_classes} classes; the case wants {p['image_size']}px and {p['num_classes']}")
        return 2
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True,
                                 seed=data_order_seed(s["seed"]),  # the repeat's nonce in the order
                                 drop_last=True)
    if len(sampler) < mbs:
        log(f"error: {args.data} holds {len(dataset)} images, {len(sampler)} per process: fewer than "
            f"one micro batch of {mbs}; use a smaller batch or more images (num_samples)")
        return 2
    loader = batch_loader(dataset, sampler, mbs, **runtime.loader_options(workers=8))
    normalise = normalise_on_device(device)
    steps_per_epoch = max(1, loader.sampler.batches_per_epoch() // accum)
    autocast = torch.autocast(device.type, dtype=DTYPES[precision]) if precision != "fp32" else nullcontext()
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    max_steps = s["max_steps"]
    if rank == 0:
        dll("PARAMETER", [("arch", args.model, None), ("batch_size", mbs, None),
                          ("epochs", math.ceil(max_steps / steps_per_epoch), None),
                          ("precision", precision, None), ("world_size", world, None)])
        log(f"> {args.model}: {n_params:,} trainable parameters, {p['image_size']}x{p['image_size']} "
            f"images, {p['num_classes']} classes, {len(dataset)} training images; "
            f"{'ddp' if world > 1 else 'single'} on {world} x {runtime.device_name}, micro batch {mbs}, "
            f"grad accum {accum}, global batch {global_batch}, channels-last {bool(p.get('channels_last'))}, "
            f"compile {bool(p.get('compile'))}, torch {torch.__version__}")
        print_readback(  # what was built and will run, before step 1: harness checks it
            model=args.model, parameters=n_params, image_size=dataset.records.image_size,
            num_classes=dataset.records.num_classes, width_multiplier=p["width_multiplier"],
            micro_batch_size=mbs, grad_accum_steps=accum, global_batch_size=global_batch,
            world_size=world, precision=precision, learning_rate=p["learning_rate"],
            lr_warmup_steps=p["lr_warmup_steps"], max_steps=max_steps, seed=s["seed"],
            device_type=device.type, channels_last=bool(p.get("channels_last")),
            compile=bool(p.get("compile")))

    data = iter(loader)
    # harness equivalence: layers named by position, the canonical state exported or loaded,
    # the first batch's per-layer checksums, then the neutral sample order
    equivalence = Equivalence.from_config(args.config, "pytorch", torch.__version__)
    loss_dtype = torch.float32
    if equivalence is not None:
        if equivalence.float64:  # the case's equivalence_precision
            model.double()
            torch_equivalence.float32_batch_norm_eps(model, equivalence)
            loss_dtype = torch.float64
            for group in optimizer.param_groups:
                group.update(momentum=equivalence.hyper(p["momentum"]),
                             weight_decay=equivalence.hyper(p["weight_decay"]))

        def equivalence_data():
            for images, labels in equivalence_batches(dataset.records, equivalence, mbs, s["seed"]):
                yield torch.from_numpy(images.astype(equivalence.dtype)), torch.from_numpy(labels)

        first, first_labels = (t.to(device) for t in next(equivalence_data()))
        order = torch_equivalence.layer_order(model, lambda: model(first))
        rename = positional_names([(name, kind) for name, kind, _ in order],
                                  dict(torch_equivalence.CNN_LAYERS.values()))
        torch_equivalence.start(equivalence, model, mbs, rename)
        initial = torch_equivalence.state_arrays(model, rename)
        model.train()
        convs = [module for _, kind, module in order if kind == "conv"]
        torch_equivalence.record_activations(
            equivalence, [*((f"conv.{i}", m) for i, m in enumerate(convs)),
                          ("fc", next(m for _, kind, m in order if kind == "fc"))],
            lambda: F.cross_entropy(model(first), first_labels))
        torch_equivalence.load_arrays(model, initial, rename)  # the running statistics as they were
        data = equivalence_data()
        normalise = lambda images: images  # noqa: E731 (normalised by equivalence_batches)
    model.train()
    profiler = StepProfiler(rank, device.type, log)
    for step in range(1, max_steps + 1):
        profiler.begin(step)
        lr = lr_at(step, p["learning_rate"], p["lr_warmup_steps"], max_steps)
        if equivalence is not None:
            lr = equivalence.hyper(lr)
        for group in optimizer.param_groups:
            group["lr"] = lr
        start = time.perf_counter()
        data_time = 0.0
        step_loss = torch.zeros((), device=device, dtype=loss_dtype)
        for micro in range(accum):
            read = time.perf_counter()
            images, labels = next(data)
            images = normalise(images.to(device, non_blocking=True)).contiguous(memory_format=memory_format)
            labels = labels.to(device, non_blocking=True)
            data_time += time.perf_counter() - read
            sync = nullcontext() if micro == accum - 1 or world == 1 else forward.no_sync()
            with sync, autocast:
                loss = F.cross_entropy(forward(images).to(loss_dtype), labels) / accum
            backward(forward, scaler.scale(loss))
            step_loss += loss.detach()
        if equivalence is not None and step == 1:
            equivalence.gradients(torch_equivalence.grad_arrays(model, rename))
        optimizer_step(optimizer, scaler)
        value = mean_over_ranks(step_loss, world)  # waits for the step to finish on the device
        if equivalence is not None:
            equivalence.step(step, value)
        elapsed = time.perf_counter() - start
        profiler.end(step)
        if not math.isfinite(value):
            log(f"error: non-finite loss {value} at step {step}")
            return 1
        if rank == 0:
            epoch, iteration = (step - 1) // steps_per_epoch, (step - 1) % steps_per_epoch + 1
            dll(f"Epoch: {epoch} Iteration: {iteration} ", [
                ("train.loss", f"{value:.5f}", "None"),
                ("train.compute_ips", f"{global_batch / max(elapsed - data_time, 1e-9):.2f}", "images/s"),
                ("train.total_ips", f"{global_batch / elapsed:.2f}", "images/s"),
                ("train.lr", f"{lr:.6f}", None), ("train.data_time", f"{data_time:.5f}", "s")])
    if equivalence is not None:
        equivalence.finish(torch_equivalence.state_arrays(model, rename))
    finish_training(runtime)
    return 0


if __name__ == "__main__":
    run_and_exit(main)
