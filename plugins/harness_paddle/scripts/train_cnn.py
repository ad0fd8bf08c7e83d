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

from equivalence import Equivalence, positional_names
from image_records import ImageRecords, equivalence_batches
import paddle_equivalence
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
        return initialise(models.resnet50(num_classes=num_classes))
    if name == "mobilenet_v1":
        return initialise(models.mobilenet_v1(scale=width, num_classes=num_classes))
    fail(f"unknown model {name!r}; this script trains resnet50 and mobilenet_v1")


def initialise(model):
    """The initialisation of the PyTorch plugin's networks (``cnn_models._init`` and
    ``torch.nn.Linear``'s default), so the case starts from the same distribution in both:
    paddle.vision's own is Kaiming normal over the fan-in for convolutions and Xavier uniform
    for the classifier, which ``harness equivalence`` found to differ. The last batch norm of
    each bottleneck's residual branch starts with scale 0, as in ``cnn_models._init`` (Goyal et
    al. 2017's "zero gamma": each block starts as its shortcut)."""
    from paddle.vision.models.resnet import BottleneckBlock

    for layer in model.sublayers():
        if isinstance(layer, paddle.nn.Conv2D):
            out_channels, _, kh, kw = layer.weight.shape
            std = math.sqrt(2.0 / (out_channels * kh * kw))  # Kaiming normal, fan-out, ReLU
            layer.weight.set_value(paddle.normal(0.0, std, layer.weight.shape))
        elif isinstance(layer, paddle.nn.BatchNorm2D):
            layer.weight.set_value(paddle.ones_like(layer.weight))
            layer.bias.set_value(paddle.zeros_like(layer.bias))
        elif isinstance(layer, paddle.nn.Linear):
            bound = 1.0 / math.sqrt(layer.weight.shape[0])  # U(-1/sqrt(in), 1/sqrt(in))
            layer.weight.set_value(paddle.uniform(layer.weight.shape, min=-bound, max=bound))
            layer.bias.set_value(paddle.uniform(layer.bias.shape, min=-bound, max=bound))
    for layer in model.sublayers():
        if isinstance(layer, BottleneckBlock):
            layer.bn3.weight.set_value(paddle.zeros_like(layer.bn3.weight))
    return model


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
    equivalence = Equivalence.from_config(args.config, "paddle", paddle.__version__)
    hyper, loss_dtype = (float if equivalence is None else equivalence.hyper), "float32"
    if equivalence is not None and equivalence.float64:  # the case's equivalence_precision
        paddle.set_default_dtype("float64")  # the model, its initialisation and the optimizer
        loss_dtype = "float64"
    model = build_model(model_args.model, p["num_classes"], p["width_multiplier"])
    n_params = trainable_parameters(model)
    optimizer = paddle.optimizer.Momentum(
        learning_rate=p["learning_rate"], momentum=hyper(p["momentum"]), parameters=model.parameters(),
        weight_decay=paddle.regularizer.L2Decay(hyper(p["weight_decay"])), multi_precision=level == "O2")
    model, optimizer = amp_decorate(model, optimizer, level, s["precision"])
    model = rt.wrap(model)
    mbs, accum = s["micro_batch_size"], s["grad_accum_steps"]
    dataset = RecordDataset(args.data, s["seed"] + rt.rank)
    if dataset.records.image_size != p["image_size"] or dataset.records.num_classes != p["num_classes"]:
        fail(f"{args.data} holds {dataset.records.image_size}px images of {dataset.records.num_classes} "
             f"classes; the case wants {p['image_size']}px and {p['num_classes']}")
    # harness equivalence: layers named by position, the canonical state exported or loaded,
    # the first batch's per-layer checksums, then the neutral sample order
    if equivalence is None:
        data = shuffled_batches(rt, dataset, mbs, workers=4, epoch_keys=True)
    else:
        def equivalence_data():
            per_epoch = len(dataset) // mbs
            for count, (images, labels) in enumerate(
                    equivalence_batches(dataset.records, equivalence, mbs, s["seed"])):
                yield count // per_epoch, count % per_epoch, (paddle.to_tensor(images.astype(equivalence.dtype)),
                                                              paddle.to_tensor(labels))

        _, _, (first, first_labels) = next(equivalence_data())
        order = paddle_equivalence.layer_order(model, lambda: model(first))
        rename = positional_names([(name, kind) for name, kind, _ in order],
                                  dict(paddle_equivalence.CNN_LAYERS.values()))
        paddle_equivalence.start(equivalence, model, mbs, rename)
        initial = paddle_equivalence.state_arrays(model, rename)
        model.train()
        convs = [layer for _, kind, layer in order if kind == "conv"]
        paddle_equivalence.record_activations(
            equivalence, [*((f"conv.{i}", m) for i, m in enumerate(convs)),
                          ("fc", next(m for _, kind, m in order if kind == "fc"))],
            lambda: F.cross_entropy(model(first), first_labels.reshape([-1, 1])))
        paddle_equivalence.load_arrays(model, initial, rename)  # the running statistics as they were
        data = equivalence_data()
    max_steps = s["max_steps"]
    batches_per_epoch = data.batches_per_epoch if equivalence is None else len(dataset) // mbs
    steps_per_epoch = max(1, batches_per_epoch // accum)
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
        optimizer.set_lr(hyper(lr))
        step_loss = 0.0
        for micro in range(accum):
            _epoch, _index, (images, labels) = meter.next_batch(data)
            last = micro == accum - 1
            with rt.no_sync(model, last), autocast():
                logits = model(images)
                loss = F.cross_entropy(logits.astype(loss_dtype), labels.reshape([-1, 1])) / accum
            record_gradients = None
            if equivalence is not None and step == 1:
                def record_gradients():
                    equivalence.gradients(paddle_equivalence.grad_arrays(model, rename))
            backward_and_step(loss, optimizer, scaler, last, before_step=record_gradients)
            step_loss += float(loss.item())
            meter.loss += float(loss.item())
            top1 += topk_accuracy(logits, labels, 1) / accum
            top5 += topk_accuracy(logits, labels, 5) / accum
        if equivalence is not None:
            equivalence.step(step, step_loss)
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
    if equivalence is not None:
        equivalence.finish(paddle_equivalence.state_arrays(model, rename))
    finish(rt, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
