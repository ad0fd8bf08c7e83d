"""Image classification training with MXNet Gluon (ResNet-50 v1.5, MobileNetV1).

One process drives every device of the run: the batch is split across the contexts and a
kvstore sums the gradients (``device`` on GPUs, ``local`` on CPUs). gluon Trainer with SGD
momentum in PyTorch's convention (``mxnet_optimizer``; multi-precision master weights for fp16). Prints gluon-cv ``train_imagenet.py``
lines (``Speed`` is the whole process, i.e. all its devices)::

    Epoch[0] Batch [9]\tSpeed: 123.45 samples/sec\taccuracy=0.100000\tloss=2.300000\tlr=0.100000\tstep_time_s=0.259200
    [Epoch 0] training: accuracy=0.100000
    [Epoch 0] speed: 123 samples/sec\ttime cost: 12.345678

``accuracy`` is gluon-cv's running metric since the epoch began. ``loss`` is the mean loss of
the steps since the previous line (of this step, when every step is logged), as the other
frameworks' scripts log it: a running mean since the epoch began smooths the curve, so the
health check measured its noise at about a sixth of the batches' and flagged the warm-up's first
wobble as a spike (docs/health.md). ``step_time_s`` is the wall time per step since the
previous line (gluon-cv prints neither field; harness's parser reads both).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from equivalence import Equivalence
from image_records import ImageRecords, equivalence_batches
import mxnet_equivalence
from lr_schedule import lr_at
from memory_line import memory_line, process_peak_rss_mb
from mxnet_models import build_model, initialise, trainable_parameters
import mxnet_optimizer  # noqa: F401 (registers rateoutsidesgd)
from data_nonce import data_order_seed
from readback import print_readback


def log(msg: str) -> None:
    print(msg, flush=True)


def fail(msg: str) -> None:
    log(f"error: {msg}")
    sys.exit(2)


class RecordDataset(gluon.data.Dataset):
    """The augmented images, keyed ``(epoch, index)`` (``EpochKeys``): a loader worker's copy
    draws each image's crop and flip from its key (``ImageRecords.sample_at``), not from a
    generator every worker would copy in the same state."""

    def __init__(self, folder: str, seed: int):
        self.records = ImageRecords(folder, seed)

    def __len__(self):
        return len(self.records)

    def __getitem__(self, key):
        image, label = self.records.sample_at(key)
        return image, np.float32(label)


class EpochKeys(gluon.data.Sampler):
    """Shuffled batches of whole ``batch_size`` (the rest of an epoch is dropped), each index
    keyed with the number of the pass over the data that draws it; a pass per ``iter``."""

    def __init__(self, count: int, batch_size: int):
        self.batches = gluon.data.BatchSampler(gluon.data.RandomSampler(count), batch_size, "discard")
        self.epoch = -1

    def __len__(self):
        return len(self.batches)

    def __iter__(self):
        self.epoch += 1
        epoch = self.epoch
        for batch in self.batches:
            yield [(epoch, index) for index in batch]


def contexts(backend: dict, count: int):
    """The MXNet contexts of the run and the kvstore, from the vendor's device backend (its
    ``mxnet`` entry: the context type, gpu or cpu, and the kvstore as collective backend)."""
    entry = (backend or {}).get("frameworks", {}).get("mxnet")
    if entry is None:
        fail(f"the vendor's device backend declares no MXNet context ({(backend or {}).get('device_type')})")
    for module in entry.get("import_modules", []):
        __import__(module)
    device = entry["device_type"]
    if device not in mx.Context.devstr2type:
        fail(f"mxnet has no context type {device!r} (it has {', '.join(mx.Context.devstr2type)})")
    if device == "gpu" and count > mx.context.num_gpus():
        fail(f"{count} devices requested, {mx.context.num_gpus()} GPUs visible")
    kvstore = entry.get("dist_backend") or "local"
    return [mx.Context(device, i) for i in range(count)], device, kvstore


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="resolved config JSON written by harness")
    parser.add_argument("--data", required=True, help="folder of the uint8 image records")
    parser.add_argument("--model", required=True, choices=["resnet50", "mobilenet_v1"])
    args = parser.parse_args()
    with open(args.config, encoding="utf-8") as handle:
        cfg = json.load(handle)
    s, p = cfg["settings"], cfg["params"]
    if s["nnodes"] > 1:
        fail("multi-node MXNet training needs a parameter-server launch (dist_sync); not supported")
    mx.random.seed(s["seed"])
    np.random.seed(data_order_seed(s["seed"]))  # the sampler's shuffle, with the repeat's nonce
    ctx, device, kvstore = contexts(cfg.get("device"), s["nproc"])
    precision = s["precision"]
    if precision == "bf16":
        fail("bf16 training is not supported by MXNet 1.9 Gluon Trainer; use fp32 or fp16")
    if precision == "fp16" and device == "cpu":
        fail("fp16 training needs an accelerator; on the CPU use --precision fp32")
    if p.get("channels_last"):
        fail("channels_last is not supported for the gluon model zoo networks; use --set channels_last=false")
    dtype = "float16" if precision == "fp16" else "float32"
    equivalence = Equivalence.from_config(args.config, "mxnet", mx.__version__)
    hyper = float if equivalence is None else equivalence.hyper
    if equivalence is not None and equivalence.float64:  # the case's equivalence_precision
        dtype = "float64"

    net = build_model(args.model, p["num_classes"], p["width_multiplier"])
    net.initialize(mx.init.MSRAPrelu(), ctx=ctx)
    if dtype != "float32":
        net.cast(dtype)
    if equivalence is not None:
        mxnet_equivalence.float32_batch_norm_eps(net, equivalence)
    if equivalence is None:  # an equivalence run stays imperative: its hooks see every layer
        net.hybridize(static_alloc=True, static_shape=True)
    size = p["image_size"]
    net(mx.nd.zeros((1, 3, size, size), ctx=ctx[0], dtype=dtype))  # materialise deferred shapes
    initialise(net)  # as the other frameworks' networks start
    n_params = trainable_parameters(net)
    # SGD momentum in PyTorch's and Paddle's convention (the rate outside the buffer), so that
    # the warm-up and the cosine decay train the same schedule in every framework.
    trainer = gluon.Trainer(net.collect_params(), "rateoutsidesgd",
                            {"learning_rate": p["learning_rate"], "momentum": hyper(p["momentum"]),
                             "wd": hyper(p["weight_decay"]), "multi_precision": dtype == "float16"},
                            kvstore=kvstore)
    loss_fn = gluon.loss.SoftmaxCrossEntropyLoss()
    loss_dtype = "float64" if dtype == "float64" else "float32"

    mbs, accum = s["micro_batch_size"], s["grad_accum_steps"]
    per_step = mbs * len(ctx)  # one micro-batch of mbs per device
    dataset = RecordDataset(args.data, s["seed"])
    if dataset.records.image_size != size or dataset.records.num_classes != p["num_classes"]:
        fail(f"{args.data} holds {dataset.records.image_size}px images of {dataset.records.num_classes} "
             f"classes; the case wants {size}px and {p['num_classes']}")
    loader = gluon.data.DataLoader(dataset, batch_sampler=EpochKeys(len(dataset), per_step),
                                   num_workers=4 if device != "cpu" else 0)
    if equivalence is not None:
        # harness equivalence: layers named by position, the canonical state exported or
        # loaded, the first batch's per-layer checksums, then the neutral sample order
        if len(ctx) != 1:
            fail("an equivalence run trains on one device")

        def equivalence_data():
            for images, labels in equivalence_batches(dataset.records, equivalence, per_step, s["seed"]):
                yield (mx.nd.array(images, ctx=ctx[0], dtype=dtype),
                       mx.nd.array(labels, ctx=ctx[0], dtype=dtype))

        first, first_labels = next(equivalence_data())
        order = mxnet_equivalence.layer_order(net, lambda: net(first))
        rename = mxnet_equivalence.canonical_names(order)
        mxnet_equivalence.start(equivalence, net, rename, per_step)
        initial = mxnet_equivalence.state_arrays(net, rename)
        convs = [block for block, kind in order if kind == "conv"]
        mxnet_equivalence.record_activations(
            equivalence, [*((f"conv.{i}", b) for i, b in enumerate(convs)),
                          ("fc", next(b for b, kind in order if kind == "fc"))],
            lambda: loss_fn(net(first), first_labels).mean().asscalar())
        mxnet_equivalence.load_arrays(net, initial, rename)  # the running statistics as they were
        equivalence_stream = equivalence_data()
    if accum > 1:
        for param in net.collect_params().values():
            if param.grad_req != "null":
                param.grad_req = "add"  # gradients of the micro-batches add up until the step
    max_steps = s["max_steps"]
    steps_per_epoch = max(1, len(loader) // accum)
    log(f"> {args.model}: {n_params:,} trainable parameters, {size}x{size} images, "
        f"{p['num_classes']} classes, {len(dataset)} training images")
    log(f"> training: kvstore {kvstore} over {len(ctx)} x {device}, precision {precision}, micro batch "
        f"{mbs} per device, grad accum {accum}, global batch {per_step * accum}, mxnet {mx.__version__}")
    print_readback(  # what was built and will run, before step 1: harness checks it
        model=args.model, parameters=n_params, image_size=dataset.records.image_size,
        num_classes=dataset.records.num_classes, width_multiplier=p["width_multiplier"],
        micro_batch_size=mbs, grad_accum_steps=accum, global_batch_size=per_step * accum,
        world_size=len(ctx), precision=precision, learning_rate=p["learning_rate"],
        lr_warmup_steps=p["lr_warmup_steps"], max_steps=max_steps, seed=s["seed"],
        device_type=device)

    # gluon-cv's running accuracy since the start of the epoch; the loss of the logged steps.
    accuracy, interval_loss = mx.metric.Accuracy(), mx.metric.Loss()
    interval = max(1, int(p.get("log_interval", 1)))
    step = 0
    epoch = 0
    finished = False
    while not finished:
        accuracy.reset()
        epoch_start = tick = time.time()
        epoch_samples = 0
        batches = iter(loader) if equivalence is None else equivalence_stream
        for batch_index in range(steps_per_epoch):
            step += 1
            trainer.set_learning_rate(hyper(lr_at(step, p["learning_rate"], p["lr_warmup_steps"], max_steps)))
            step_loss = 0.0
            for _micro in range(accum):
                images, labels = next(batches)
                xs = gluon.utils.split_and_load(images.astype(dtype), ctx_list=ctx, even_split=True)
                ys = gluon.utils.split_and_load(labels, ctx_list=ctx, even_split=True)
                with autograd.record():
                    outputs = [net(x) for x in xs]
                    losses = [loss_fn(out.astype(loss_dtype), y) for out, y in zip(outputs, ys)]
                autograd.backward(losses)
                if equivalence is not None:
                    step_loss += float(sum(loss.mean().asscalar() for loss in losses)) / len(losses)
                accuracy.update(ys, [out.astype("float32") for out in outputs])
                interval_loss.update(None, losses)
            if equivalence is not None and step == 1:
                equivalence.gradients(mxnet_equivalence.grad_arrays(net, rename, 1.0 / (per_step * accum)))
            trainer.step(per_step * accum)
            if equivalence is not None:
                equivalence.step(step, step_loss / accum)
            if accum > 1:
                net.collect_params().zero_grad()
            mx.nd.waitall()  # the step is done on every device before it is timed
            epoch_samples += per_step * accum
            if step % interval == 0 or step == max_steps:
                n = interval if step % interval == 0 else step % interval
                elapsed = time.time() - tick
                speed = per_step * accum * n / elapsed
                values = [accuracy.get()[1], interval_loss.get()[1]]
                interval_loss.reset()
                fields = f"accuracy={values[0]:f}\tloss={values[1]:f}"
                # step_time_s: seconds per step over the interval, as the other frameworks'
                # scripts print it, so that step-time statistics and total work exist for MXNet.
                log(f"Epoch[{epoch}] Batch [{batch_index}]\tSpeed: {speed:f} samples/sec\t{fields}"
                    f"\tlr={trainer.learning_rate:f}\tstep_time_s={elapsed / n:f}")
                if not all(math.isfinite(v) for v in values):
                    log(f"error: non-finite metric at step {step}: {fields}")
                    return 1
                tick = time.time()
            if step >= max_steps:
                finished = True
                break
        elapsed = time.time() - epoch_start
        log(f"[Epoch {epoch}] training: accuracy={accuracy.get()[1]:f}")
        log(f"[Epoch {epoch}] speed: {int(epoch_samples / elapsed)} samples/sec\ttime cost: {elapsed:f}")
        epoch += 1
    if equivalence is not None:
        equivalence.finish(mxnet_equivalence.state_arrays(net, rename))
    if device == "cpu":
        log("> " + memory_line(process_peak_rss_mb(), "process max RSS"))
    log("> training finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())
