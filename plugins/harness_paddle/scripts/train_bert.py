"""BERT pre-training (MLM + NSP) with PaddlePaddle on the NGC HDF5 format.

Prints the step lines of PaddleNLP's BERT ``run_pretrain.py`` (``ips`` is per process), which
harness parses::

    total step: N, epoch: E, batch: B, loss: L, avg_reader_cost: R sec, avg_batch_cost: C sec,
    avg_samples: S, ips: I sequences/sec, learning rate: LR
"""

from __future__ import annotations

import sys

import paddle

from bert_hdf5 import BertSamples
from bert_model import CANONICAL_NAMES, BertForPreTraining
from equivalence import Equivalence
import paddle_equivalence
from lr_schedule import lr_at
from model_flops import bert_training_flops_per_sequence
from readback import print_readback
from paddle_common import (IntervalMeter, amp_decorate, amp_setup, backward_and_step,
                           equivalence_batches, finish, log, memory_fields, shuffled_batches,
                           stack_samples, start_training)


class HDF5Dataset(paddle.io.Dataset):
    def __init__(self, path: str):
        super().__init__()
        self.samples = BertSamples(path)

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        return self.samples.sample(index)


def main() -> int:
    args, s, p, rt = start_training(__doc__)
    rt.init_data_parallel()
    autocast, scaler, level = amp_setup(s["precision"], rt.device, p.get("amp_level", "auto"))
    model = BertForPreTraining(p, recompute=bool(p.get("recompute")))
    n_params = model.num_parameters()
    # harness equivalence: the canonical initial state (Hugging Face's names) exported or loaded
    equivalence = Equivalence.from_config(args.config, "paddle", paddle.__version__)
    names = CANONICAL_NAMES(p["num_layers"])
    if equivalence is not None:
        paddle_equivalence.start(equivalence, model, s["micro_batch_size"] * p["max_predictions"], names)
    decay = [q.name for q in model.parameters() if len(q.shape) >= 2]
    optimizer = paddle.optimizer.AdamW(
        learning_rate=p["learning_rate"], beta1=p["adam_beta1"], beta2=p["adam_beta2"], epsilon=1e-6,
        parameters=model.parameters(), weight_decay=p["weight_decay"],
        apply_decay_param_fun=lambda name: name in decay,
        grad_clip=paddle.nn.ClipGradByGlobalNorm(p["grad_clip"]), multi_precision=level == "O2")
    model, optimizer = amp_decorate(model, optimizer, level, s["precision"])
    model = rt.wrap(model)
    mbs, accum = s["micro_batch_size"], s["grad_accum_steps"]
    global_batch = mbs * accum * rt.world
    dataset = HDF5Dataset(args.data)
    if dataset.samples.seq_len != p["seq_len"]:
        log(f"error: {args.data} holds sequences of {dataset.samples.seq_len}, the case wants {p['seq_len']}")
        return 2
    if equivalence is None:
        data = shuffled_batches(rt, dataset, mbs, workers=2)
    else:  # the neutral sample order every framework trains on
        data = equivalence_batches(equivalence, dataset, mbs, s["seed"], stack_samples)
        _, _, first = next(equivalence_batches(equivalence, dataset, mbs, s["seed"], stack_samples))
        model.train()
        paddle_equivalence.record_activations(
            equivalence, [("bert.embeddings", model.embeddings),
                          *((f"bert.encoder.layer.{i}", layer) for i, layer in enumerate(model.layers))],
            lambda: model(*first))
    max_steps = s["max_steps"]
    if rt.rank == 0:
        flops = bert_training_flops_per_sequence(p["num_layers"], p["hidden_size"],
                                                 p["intermediate_size"], p["vocab_size"],
                                                 p["seq_len"], p["max_predictions"])
        log(f"> BERT: {n_params:,} parameters, {p['num_layers']} layers, hidden {p['hidden_size']}, "
            f"{p['num_heads']} heads, seq {p['seq_len']}, max predictions {p['max_predictions']}, "
            f"{flops:.3e} training FLOPs/sequence")
        log(f"> training: {'data parallel' if rt.world > 1 else 'single'} on {rt.world} x {rt.device}, "
            f"precision {s['precision']} (amp {level}), micro batch {mbs}, grad accum {accum}, "
            f"global batch {global_batch}, paddle {paddle.__version__}")
        print_readback(  # what was built and will run, before step 1: harness checks it
            model="bert", parameters=n_params, num_layers=len(getattr(model, "_layers", model).layers),
            hidden_size=p["hidden_size"], num_heads=p["num_heads"],
            intermediate_size=p["intermediate_size"], vocab_size=p["vocab_size"],
            type_vocab_size=p["type_vocab_size"], max_position_embeddings=p["max_position_embeddings"],
            seq_len=dataset.samples.seq_len, max_predictions=p["max_predictions"],
            micro_batch_size=mbs, grad_accum_steps=accum, global_batch_size=global_batch,
            world_size=rt.world, precision=s["precision"], amp=level,
            learning_rate=p["learning_rate"], lr_warmup_steps=p["lr_warmup_steps"],
            max_steps=max_steps, seed=s["seed"], device_type=rt.device)
    model.train()
    meter = IntervalMeter(rt, p.get("log_interval", 1), max_steps)
    epoch = batch_index = 0
    for step in range(1, max_steps + 1):
        lr = lr_at(step, p["learning_rate"], p["lr_warmup_steps"], max_steps)
        optimizer.set_lr(lr)
        step_loss = 0.0
        for micro in range(accum):
            epoch, batch_index, batch = meter.next_batch(data)
            last = micro == accum - 1
            with rt.no_sync(model, last), autocast():
                loss = model(*batch) / accum
            record_gradients = None
            if equivalence is not None and step == 1:
                def record_gradients():
                    equivalence.gradients(paddle_equivalence.grad_arrays(model, names))
            backward_and_step(loss, optimizer, scaler, last, before_step=record_gradients)
            step_loss += float(loss.item())
        meter.loss += step_loss
        if equivalence is not None:
            equivalence.step(step, step_loss)
        n = meter.end_step(step)
        if n:
            avg_loss = meter.mean_loss(n, step)
            avg_batch = meter.batch_cost / n
            if rt.rank == 0:
                log(f"total step: {step}, epoch: {epoch}, batch: {batch_index}, loss: {avg_loss:.6f}, "
                    f"avg_reader_cost: {meter.reader_cost / n:.5f} sec, avg_batch_cost: {avg_batch:.5f} sec, "
                    f"avg_samples: {mbs * accum:.5f}, ips: {mbs * accum / avg_batch:.5f} sequences/sec, "
                    f"learning rate: {lr:.5e}" + memory_fields(rt.device))
            meter.reset()
    if equivalence is not None:
        equivalence.finish(paddle_equivalence.state_arrays(model, names))
    finish(rt, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
