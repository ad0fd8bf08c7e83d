"""BERT pre-training (MLM + NSP) with PyTorch on the NGC HDF5 format, as NVIDIA's NGC example.

The model is Hugging Face ``BertForPreTraining`` built from a ``BertConfig`` (no download);
like NVIDIA's ``run_pretraining.py`` only the masked positions go through the MLM head.
Prints DLLogger lines, which harness parses::

    DLL 2026-01-01 10:00:00.000000 - Training Epoch: 0 Training Iteration: 1  average_loss : 8.1
        step_loss : 8.0 learning_rate : 0.001 data_time : 0.0004 s
    DLL 2026-01-01 10:01:00.000000 -  e2e_train_time : 60.0 s training_sequences_per_second : 120.0
        sequences/s final_loss : 7.2 None raw_train_time : 58.0 s

``data_time`` (not in NVIDIA's lines) is how long the step waited for its batches.
"""

from __future__ import annotations

import argparse
import math
import time
from contextlib import nullcontext

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, DistributedSampler

from bert_hdf5 import BertSamples
from dll import dll
from equivalence import Equivalence
import torch_equivalence
from lr_schedule import lr_at
from data_nonce import data_order_seed
from readback import print_readback
from step_profile import StepProfiler
from torch_setup import (backward, compiled, data_parallel, finish_training, fused_optimizer_kernels,
                         mean_over_ranks, optimizer_step, run_and_exit, start_training)

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}


def log(msg: str) -> None:
    print(msg, flush=True)


class HDF5Dataset(Dataset):
    def __init__(self, path: str):
        self.samples = BertSamples(path)

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, index):
        return tuple(torch.as_tensor(x) for x in self.samples.sample_positions(index))


def build_model(p: dict):
    from transformers import BertConfig, BertForPreTraining

    config = BertConfig(
        vocab_size=p["vocab_size"], hidden_size=p["hidden_size"], num_hidden_layers=p["num_layers"],
        num_attention_heads=p["num_heads"], intermediate_size=p["intermediate_size"],
        hidden_dropout_prob=p["dropout"], attention_probs_dropout_prob=p["dropout"],
        max_position_embeddings=p["max_position_embeddings"], type_vocab_size=p["type_vocab_size"],
        initializer_range=p["init_std"])
    return BertForPreTraining(config)


class PretrainingLoss(torch.nn.Module):
    """MLM + NSP loss of a ``BertForPreTraining``, the masked positions alone through the MLM head.

    One module for the whole step so that DistributedDataParallel's forward runs (it arms the
    gradient all-reduce for the backward that follows: calling the wrapped model's parts
    directly trained unsynchronised replicas) and so that torch.compile sees the loss too. The
    positions are gathered (``sample_positions``: fixed shapes, padding labelled -1), not
    selected with a mask, whose data-dependent size made the host wait for the device every step.
    """

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, input_ids, segment_ids, input_mask, positions, labels, nsp_labels):
        sequence, pooled = self.model.bert(input_ids=input_ids, token_type_ids=segment_ids,
                                           attention_mask=input_mask, return_dict=False)[:2]
        rows = positions.unsqueeze(-1).expand(-1, -1, sequence.size(-1))
        mlm_logits = self.model.cls.predictions(torch.gather(sequence, 1, rows))
        nsp_logits = self.model.cls.seq_relationship(pooled)
        return (F.cross_entropy(mlm_logits.float().flatten(0, 1), labels.flatten(), ignore_index=-1)
                + F.cross_entropy(nsp_logits.float(), nsp_labels.view(-1)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True)
    parser.add_argument("--data", required=True, help="NGC BERT HDF5 file")
    args = parser.parse_args()
    s, p, runtime = start_training(args.config)
    device, world, rank = runtime.device, runtime.world, runtime.rank
    precision = s["precision"]
    model = build_model(p)
    # harness equivalence: the canonical initial state (Hugging Face's names) exported or loaded
    equivalence = Equivalence.from_config(args.config, "pytorch", torch.__version__)
    if equivalence is not None:
        torch_equivalence.start(equivalence, model, s["micro_batch_size"] * p["max_predictions"])
    model = model.to(device)
    if p.get("recompute"):
        model.gradient_checkpointing_enable()
    n_params = sum(q.numel() for q in model.parameters())
    decay = [q for n, q in model.named_parameters() if q.dim() >= 2]
    no_decay = [q for n, q in model.named_parameters() if q.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": p["weight_decay"]},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=p["learning_rate"], betas=(p["adam_beta1"], p["adam_beta2"]), eps=1e-6,
                                  fused=fused_optimizer_kernels(device))
    step_loss_module = PretrainingLoss(model)
    step_loss_module = compiled(step_loss_module, p)
    if world > 1:
        step_loss_module = data_parallel(step_loss_module, runtime, p.get("grad_allreduce", "fp32"),
                                         s["grad_accum_steps"], p.get("grad_sync", "ddp"),
                                         p.get("compile_mode", "default"))
    mbs, accum = s["micro_batch_size"], s["grad_accum_steps"]
    global_batch = mbs * accum * world
    dataset = HDF5Dataset(args.data)
    if dataset.samples.seq_len != p["seq_len"]:
        log(f"error: {args.data} holds sequences of {dataset.samples.seq_len}, the case wants {p['seq_len']}")
        return 2
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True,
                                 seed=data_order_seed(s["seed"]),  # the repeat's nonce in the order
                                 drop_last=True)
    loader = DataLoader(dataset, batch_size=mbs, sampler=sampler, drop_last=True,
                        **runtime.loader_options(workers=4))
    autocast = torch.autocast(device.type, dtype=DTYPES[precision]) if precision != "fp32" else nullcontext()
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    max_steps, skip = s["max_steps"], s["skip_steps"]
    if rank == 0:
        namespace = (f"Namespace(bert_model='bert-base-uncased', max_seq_length={p['seq_len']}, "
                     f"max_predictions_per_seq={p['max_predictions']}, train_batch_size={mbs * accum}, "
                     f"gradient_accumulation_steps={accum}, max_steps={max_steps}, "
                     f"learning_rate={p['learning_rate']}, precision='{precision}', world_size={world})")
        dll("PARAMETER", [("Config", f"[{namespace}]", None)])
        dll("PARAMETER", [("batch_size_per_gpu", mbs, None)])
        log(f"> BERT: {n_params:,} parameters, {p['num_layers']} layers, hidden {p['hidden_size']}, "
            f"{p['num_heads']} heads, seq {p['seq_len']}; {'ddp' if world > 1 else 'single'} on {world} x "
            f"{runtime.device_name}, precision {precision}, global batch {global_batch}, "
            f"compile {bool(p.get('compile'))}, torch {torch.__version__}")
        built = model.config  # what was built, before step 1: harness checks it
        print_readback(
            model="bert", parameters=n_params, num_layers=built.num_hidden_layers,
            hidden_size=built.hidden_size, num_heads=built.num_attention_heads,
            intermediate_size=built.intermediate_size, vocab_size=built.vocab_size,
            type_vocab_size=built.type_vocab_size, max_position_embeddings=built.max_position_embeddings,
            seq_len=dataset.samples.seq_len, max_predictions=p["max_predictions"],
            micro_batch_size=mbs, grad_accum_steps=accum, global_batch_size=global_batch,
            world_size=world, precision=precision, learning_rate=p["learning_rate"],
            lr_warmup_steps=p["lr_warmup_steps"], max_steps=max_steps, skip_steps=skip,
            seed=s["seed"], device_type=device.type)

    def batches():
        epoch = 0
        while True:
            sampler.set_epoch(epoch)
            for batch in loader:
                yield epoch, batch
            epoch += 1

    if equivalence is not None:  # the neutral sample order every framework trains on
        def batches():
            per_epoch = len(dataset) // mbs
            for count, indices in enumerate(equivalence.batches(len(dataset), mbs, s["seed"])):
                samples = [dataset[int(i)] for i in indices]
                yield count // per_epoch, [torch.stack(field) for field in zip(*samples)]

        model.train()
        _, first = next(batches())
        torch_equivalence.record_activations(
            equivalence, [("bert.embeddings", model.bert.embeddings),
                          *((f"bert.encoder.layer.{i}", layer)
                            for i, layer in enumerate(model.bert.encoder.layer))],
            lambda: step_loss_module(*[t.to(device) for t in first]))
    data = batches()
    model.train()
    average_loss = 0.0
    e2e_start = time.perf_counter()
    measured_start = None
    profiler = StepProfiler(rank, device.type, log)
    for step in range(1, max_steps + 1):
        if step == skip + 1:
            measured_start = time.perf_counter()
        profiler.begin(step)
        data_time = 0.0
        lr = lr_at(step, p["learning_rate"], p["lr_warmup_steps"], max_steps)
        for group in optimizer.param_groups:
            group["lr"] = lr
        step_loss = torch.zeros((), device=device)
        for micro in range(accum):
            read = time.perf_counter()
            epoch, batch = next(data)
            batch = [t.to(device, non_blocking=True) for t in batch]
            data_time += time.perf_counter() - read
            sync = nullcontext() if micro == accum - 1 or world == 1 else step_loss_module.no_sync()
            with sync, autocast:
                loss = step_loss_module(*batch) / accum
            backward(step_loss_module, scaler.scale(loss))
            step_loss += loss.detach()
        if equivalence is not None and step == 1:
            equivalence.gradients(torch_equivalence.grad_arrays(model))
        optimizer_step(optimizer, scaler, model.parameters(), p["grad_clip"])
        value = mean_over_ranks(step_loss, world)  # waits for the step to finish
        if equivalence is not None:
            equivalence.step(step, value)
        profiler.end(step)
        if not math.isfinite(value):
            log(f"error: non-finite loss {value} at step {step}")
            return 1
        average_loss += value
        if rank == 0:
            dll(f"Training Epoch: {epoch} Training Iteration: {step} ",
                [("average_loss", f"{average_loss / step:.5f}", None), ("step_loss", f"{value:.5f}", None),
                 ("learning_rate", f"{lr:.6e}", None), ("data_time", f"{data_time:.5f}", "s")])
    end = time.perf_counter()
    if rank == 0:
        measured = max(1, max_steps - skip)
        raw = end - (measured_start or e2e_start)
        dll("", [("e2e_train_time", f"{end - e2e_start:.3f}", "s"),
                 ("training_sequences_per_second", f"{global_batch * measured / raw:.2f}", "sequences/s"),
                 ("final_loss", f"{value:.5f}", "None"), ("raw_train_time", f"{raw:.3f}", "s")])
    if equivalence is not None:
        equivalence.finish(torch_equivalence.state_arrays(model))
    finish_training(runtime)
    return 0


if __name__ == "__main__":
    run_and_exit(main)
