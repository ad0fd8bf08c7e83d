"""GPT pre-training with PaddlePaddle: the script the Paddle plugin launches.

Standalone (paddle and numpy; the dataset reader and the learning-rate schedule come from
harness_cases/shared_scripts on PYTHONPATH). Prints PaddleNLP step lines, which harness parses::

    global step N, epoch: E, batch: B, loss: L, avg_reader_cost: R sec, avg_batch_cost: C sec,
    speed: S step/s, ips_total: T tokens/s, ips: I tokens/s, learning rate: LR
"""

from __future__ import annotations

import json
import sys

import paddle

from gpt_model import GPT
from gpt_windows import GPTWindows
from lr_schedule import lr_at, schedule_steps
from model_flops import gpt_training_flops_per_token
from equivalence import Equivalence
import paddle_equivalence
from paddle_common import (IntervalMeter, amp_decorate, amp_setup, backward_and_step,
                           equivalence_batches, finish, log, memory_fields, shuffled_batches,
                           stack_samples, start_training)
from paddle_parallel import setup_hybrid, shard_optimizer
from data_nonce import data_order_seed
from readback import print_readback


class WindowDataset(paddle.io.Dataset):
    def __init__(self, windows: GPTWindows):
        super().__init__()
        self.windows = windows

    def __len__(self):
        return len(self.windows)

    def __getitem__(self, index):
        return self.windows.window(index)


def main() -> int:
    args, s, p, rt = start_training(__doc__)
    layout = json.loads(args.parallel)
    setup_hybrid(rt, layout, s["seed"])
    autocast, scaler, level = amp_setup(s["precision"], rt.device,
                                        p.get("amp_level", "auto"))
    model = GPT(vocab_size=p["vocab_size"], seq_len=p["seq_len"], num_layers=p["num_layers"],
                hidden_size=p["hidden_size"], num_heads=p["num_heads"],
                ffn_multiplier=p["ffn_multiplier"], dropout=p["dropout"], init_std=p["init_std"],
                recompute=p["recompute"], tensor_parallel=layout["tensor_parallel_degree"])
    n_params = model.num_parameters()
    # harness equivalence: the canonical initial state exported or loaded, before anything else
    equivalence = Equivalence.from_config(args.config, "paddle", paddle.__version__)
    if equivalence is not None:
        paddle_equivalence.start(equivalence, model, s["micro_batch_size"] * p["seq_len"])
    if rt.rank == 0:  # what was built and will run, before step 1: harness checks it
        print_readback(
            model="gpt", parameters=n_params, num_layers=len(model.blocks),
            hidden_size=int(model.ln_f.weight.shape[0]), num_heads=p["num_heads"],
            seq_len=int(model.wpe.weight.shape[0]), vocab_size=p["vocab_size"],
            micro_batch_size=s["micro_batch_size"], grad_accum_steps=s["grad_accum_steps"],
            global_batch_size=s["micro_batch_size"] * s["grad_accum_steps"] * rt.data_parallel_world(),
            world_size=rt.world, precision=s["precision"], amp=level,
            learning_rate=p["learning_rate"], min_learning_rate=p["min_learning_rate"],
            lr_warmup_steps=p["lr_warmup_steps"], lr_decay_steps=p["lr_decay_steps"],
            lr_warmup_tokens=p.get("lr_warmup_tokens"), lr_decay_tokens=p.get("lr_decay_tokens"),
            tensor_parallel_degree=layout["tensor_parallel_degree"],
            max_steps=s["max_steps"], seed=s["seed"], device_type=rt.device)
    flops_per_token = gpt_training_flops_per_token(n_params, p["num_layers"], p["hidden_size"], p["seq_len"])
    decay_params = [q.name for q in model.parameters() if len(q.shape) >= 2]
    max_steps = s["max_steps"]
    optimizer = paddle.optimizer.AdamW(
        learning_rate=p["learning_rate"], beta1=p["adam_beta1"], beta2=p["adam_beta2"], epsilon=1e-8,
        parameters=model.parameters(), weight_decay=p["weight_decay"],
        apply_decay_param_fun=lambda name: name in decay_params,
        grad_clip=paddle.nn.ClipGradByGlobalNorm(p["grad_clip"]),
        multi_precision=level == "O2",
    )
    model, optimizer = amp_decorate(model, optimizer, level, s["precision"])
    model, optimizer, scaler, parallel = shard_optimizer(rt, layout, model, optimizer, scaler)

    mbs, accum = s["micro_batch_size"], s["grad_accum_steps"]
    global_batch = mbs * accum * rt.data_parallel_world()
    dataset = WindowDataset(GPTWindows(args.data, p["seq_len"], data_order_seed(s["seed"]),
                                       p["vocab_size"]))  # the repeat's nonce in the document order
    if equivalence is None:
        data = shuffled_batches(rt, dataset, mbs, workers=2)
    else:  # the neutral sample order every framework trains on
        data = equivalence_batches(equivalence, dataset, mbs, s["seed"], stack_samples)
        _, _, (inputs, targets) = next(equivalence_batches(equivalence, dataset, mbs, s["seed"],
                                                           stack_samples))
        paddle_equivalence.record_activations(
            equivalence, [("embeddings", model.drop),
                          *((f"blocks.{i}", block) for i, block in enumerate(model.blocks)),
                          ("ln_f", model.ln_f)],
            lambda: model(inputs, targets))
    warmup_steps, decay_steps = schedule_steps(p, global_batch * p["seq_len"], max_steps)
    if rt.rank == 0:
        log(f"> GPT: {n_params:,} parameters, {p['num_layers']} layers, hidden {p['hidden_size']}, "
            f"{p['num_heads']} heads, seq {p['seq_len']}, vocab {p['vocab_size']}")
        log(f"> training: {parallel} on {rt.world} x {rt.device}, precision {s['precision']} "
            f"(amp {level}), micro batch {mbs}, grad accum {accum}, global batch {global_batch}, "
            f"recompute {p['recompute']}, paddle {paddle.__version__}, "
            f"{flops_per_token:.3e} training FLOPs/token")
        log(f"> learning rate: peak {p['learning_rate']:g}, linear warm-up over {warmup_steps} steps, "
            f"cosine decay to {p['min_learning_rate']:g} at step {decay_steps}")

    model.train()
    meter = IntervalMeter(rt, p.get("log_interval", 1), max_steps)
    epoch = batch_index = 0
    for step in range(1, max_steps + 1):
        lr = lr_at(step, p["learning_rate"], warmup_steps, decay_steps, floor=p["min_learning_rate"])
        optimizer.set_lr(lr)
        step_loss = 0.0
        for micro in range(accum):
            epoch, batch_index, (inputs, targets) = meter.next_batch(data)
            last = micro == accum - 1
            with rt.no_sync(model, last), autocast():
                loss = model(inputs, targets) / accum
            record_gradients = None
            if equivalence is not None and step == 1:
                def record_gradients():
                    equivalence.gradients(paddle_equivalence.grad_arrays(model))
            backward_and_step(loss, optimizer, scaler, last, before_step=record_gradients)
            step_loss += float(loss.item())  # also waits for the device before timing
        meter.loss += step_loss
        if equivalence is not None:
            equivalence.step(step, step_loss)
        n = meter.end_step(step)
        if n:
            avg_loss = meter.mean_loss(n, step)
            avg_batch = meter.batch_cost / n
            tokens = global_batch * p["seq_len"]
            if rt.rank == 0:
                log(f"global step {step}, epoch: {epoch}, batch: {batch_index}, loss: {avg_loss:.6f}, "
                    f"avg_reader_cost: {meter.reader_cost / n:.5f} sec, avg_batch_cost: {avg_batch:.5f} sec, "
                    f"speed: {1.0 / avg_batch:.4f} step/s, ips_total: {tokens / avg_batch:.2f} tokens/s, "
                    f"ips: {tokens / avg_batch / rt.world:.2f} tokens/s, learning rate: {lr:.5e}"
                    + memory_fields(rt.device))
            meter.reset()
    if equivalence is not None:
        equivalence.finish(paddle_equivalence.state_arrays(model))
    finish(rt, data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
