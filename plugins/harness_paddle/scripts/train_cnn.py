"""Image classification training (ResNet-50, MobileNetV1 from paddle.vision.models).

SGD with momentum and L2 weight decay, linear warm-up then cosine decay, on the uint8
image records. Prints PaddleClas step lines (per process ``ips``), which harness parses::

    [Train][Epoch 1/2][Iter: 10/64]lr(Cosine): 0.10000000, top1: 0.10000, top5: 0.50000,
    CELoss: 2.30000, loss: 2.30000, batch_cost: 0.30000s, reader_cost: 0.00100, ips: 26.66 images/sec
"""

from __future__ import annotations

import argparse
import math
import sys

import numpy as np
import paddle
import paddle.nn.functional as F

from image_records import ImageRecords
from lr_schedule import lr_at
from readback import print_readback
from paddle_common import (IntervalMeter, amp_decorate, amp_setup, backward_and_step, fail, finish, log,
                           memory_fields, shuffled_batches, start_training)


class RecordDataset(paddle.io.Dataset):
    """The augmented images, keyed ``(epoch, index)`` (``shuffled_batches(epoch_keys=True)``):
    a loader worker's copy draws each image's crop and flip from its key
    (``ImageRecords.sample_at``), not from a generator every worker would copy in the same state."""

    def __init__(self, folder: str, seed: int):
        super().__init__()
        self.records = ImageRecords(folder, seed)

    def __len__(self):
        return len(self.records)

    def __getitem__(self, key):
        image, label = self.records.sample_at(key)
        return image, np.int64(label)


def build_model(name: str, num_classes: int, width: float):
    from paddle.vision import models

    if name == "resnet50":
        return models.resnet50(num_classes=num_classes)
    if name == "mobilenet_v1":
        return models.mobilenet_v1(scale=width, num_classes=num_classes)
    fail(f"unknown model {name!r}; this script trains resnet50 and mobilenet_v1")


def trainable_parameters(model) -> int:
    """Parameters the optimizer updates (BatchNorm running statistics are not counted)."""
    return sum(int(p.numel()) for p in model.parameters() if not p.stop_gradient)


def topk_accuracy(logits, labels, k: int) -> float:
    k = min(k, logits.shape[-1])
    return float(paddle.metric.accuracy(logits.astype("float32"), labels.reshape([-1, 1]), k=k).item())


def main() -> int:
    extra = argparse.ArgumentParser(add_help=False)
    extra.add_argument("--model", required=True)
    model_args, rest = extra.parse_known_args()
    sys.argv = [sys.argv[0], *rest]
    args, s, p, rt = start_training(__doc__)
    rt.init_data_parallel()
    if p.get("channels_last"):
        fail("channels_last is not available for paddle.vision models; run with --set channels_last=false")
    autocast, scaler, level = amp_setup(s["precision"], rt.device, p.get("amp_level", "auto"))
    model = build_model(model_args.model, p["num_classes"], p["width_multiplier"])
    n_params = trainable_parameters(model)
    optimizer = paddle.optimizer.Momentum(
        learning_rate=p["learning_rate"], momentum=p["momentum"], parameters=model.parameters(),
        weight_decay=paddle.regularizer.L2Decay(p["weight_decay"]), multi_precision=level == "O2")
    model, optimizer = amp_decorate(model, optimizer, level, s["precision"])
    model = rt.wrap(model)
    mbs, accum = s["micro_batch_size"], s["grad_accum_steps"]
    dataset = RecordDataset(args.data, s["seed"] + rt.rank)
    if dataset.records.image_size != p["image_size"] or dataset.records.num_classes != p["num_classes"]:
        fail(f"{args.data} holds {dataset.records.image_size}px images of {dataset.records.num_classes} "
             f"classes; the case wants {p['image_size']}px and {p['num_classes']}")
    data = shuffled_batches(rt, dataset, mbs, workers=4, epoch_keys=True)
    max_steps = s["max_steps"]
    steps_per_epoch = max(1, data.batches_per_epoch // accum)
    epochs = math.ceil(max_steps / steps_per_epoch)
    if rt.rank == 0:
        log(f"> {model_args.model}: {n_params:,} trainable parameters, {p['image_size']}x{p['image_size']} "
            f"images, {p['num_classes']} classes, {len(dataset)} training images")
        log(f"> training: {'data parallel' if rt.world > 1 else 'single'} on {rt.world} x {rt.device}, "
            f"precision {s['precision']} (amp {level}), micro batch {mbs}, grad accum {accum}, "
            f"global batch {mbs * accum * rt.world}, paddle {paddle.__version__}")
        print_readback(  # what was built and will run, before step 1: harness checks it
            model=model_args.model, parameters=n_params, image_size=dataset.records.image_size,
            num_classes=dataset.records.num_classes, width_multiplier=p["width_multiplier"],
            micro_batch_size=mbs, grad_accum_steps=accum, global_batch_size=mbs * accum * rt.world,
            world_size=rt.world, precision=s["precision"], amp=level,
            learning_rate=p["learning_rate"], lr_warmup_steps=p["lr_warmup_steps"],
            max_steps=max_steps, seed=s["seed"], device_type=rt.device)
    model.train()
    meter = IntervalMeter(rt, p.get("log_interval", 1), max_steps)
    top1 = top5 = 0.0
    for step in range(1, max_steps + 1):
        lr = lr_at(step, p["learning_rate"], p["lr_warmup_steps"], max_steps)
        optimizer.set_lr(lr)
        for micro in range(accum):
            _epoch, _index, (images, labels) = meter.next_batch(data)
            last = micro == accum - 1
            with rt.no_sync(model, last), autocast():
                logits = model(images)
                loss = F.cross_entropy(logits.astype("float32"), labels.reshape([-1, 1])) / accum
            backward_and_step(loss, optimizer, scaler, last)
            meter.loss += float(loss.item())
            top1 += topk_accuracy(logits, labels, 1) / accum
            top5 += topk_accuracy(logits, labels, 5) / accum
        n = meter.end_step(step)
        if n:
            avg_loss = meter.mean_loss(n, step)
            avg_batch = meter.batch_cost / n
            epoch, iteration = (step - 1) // steps_per_epoch + 1, (step - 1) % steps_per_epoch + 1
            if rt.rank == 0:
                log(f"[Train][Epoch {epoch}/{epochs}][Iter: {iteration}/{steps_per_epoch}]lr(Cosine): "
                    f"{lr:.8f}, top1: {top1 / n:.5f}, top5: {top5 / n:.5f}, CELoss: {avg_loss:.5f}, "
                    f"loss: {avg_loss:.5f}, batch_cost: {avg_batch:.5f}s, reader_cost: {meter.reader_cost / n:.5f}, "
                    f"ips: {mbs * accum / avg_batch:.5f} images/sec" + memory_fields(rt.device))
            meter.reset()
            top1 = top5 = 0.0
    finish(rt)
    return 0


if __name__ == "__main__":
    sys.exit(main())
