"""GPT pre-training with PyTorch: the training script the PyTorch plugin launches.

Standalone (torch and numpy only): ``python train_gpt.py --config config.json --data-prefix P``,
or under ``python -m torch.distributed.run`` for data parallel. Prints Megatron-LM style
iteration lines, which harness parses.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from contextlib import nullcontext

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler

from gpt_dataset import GPTWindowDataset
from torch_setup import (data_parallel, finish_training, fused_optimizer_kernels, optimizer_step, run_and_exit,
                         start_training)
from gpt_model import GPT, weight_gradient_fusion_unavailable
from gpt_knobs import with_knob_defaults
from lr_schedule import lr_at, schedule_steps
from model_flops import gpt_training_flops_per_token
from data_nonce import data_order_seed
from readback import print_readback
from step_profile import StepProfiler
from equivalence import Equivalence
import torch_equivalence

# fp8 runs the block matrix products in float8 (fp8_training.py) and the rest in bf16 autocast.
DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16, "fp8": torch.bfloat16}


def log(msg: str) -> None:
    print(msg, flush=True)


def split_weight_decay(model: torch.nn.Module) -> tuple[list, list]:
    """Matrices decay; biases and LayerNorm weights do not."""
    decay, no_decay = [], []
    for param in model.parameters():
        if param.requires_grad:
            (decay if param.dim() >= 2 else no_decay).append(param)
    return decay, no_decay


def build_optimizer(model: torch.nn.Module, p: dict, device: torch.device):
    decay, no_decay = split_weight_decay(model)
    groups = [{"params": decay, "weight_decay": p["weight_decay"]},
              {"params": no_decay, "weight_decay": 0.0}]
    fused = bool(p["fused_optimizer"]) and fused_optimizer_kernels(device)
    return torch.optim.AdamW(groups, lr=p["learning_rate"], betas=(p["adam_beta1"], p["adam_beta2"]),
                             eps=1e-8, fused=fused)


def wrap_parallel(model: torch.nn.Module, p: dict, runtime, precision: str):
    if int(p["tensor_parallel_degree"]) > 1 or int(p["pipeline_parallel_degree"]) > 1:
        log("error: the PyTorch plugin trains data parallel only; tensor/pipeline parallel "
            "layouts run with --framework megatron")
        sys.exit(2)
    stage, world = int(p["sharding_stage"]), runtime.world
    if stage > 0 and world > 1:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        # FlagPerf's sharding stages on FSDP2, which always keeps optimizer state and
        # gradients sharded (stages 1 and 2). Stage 3 also frees the gathered parameters after
        # each block's forward (reshard_after_forward) and gathers them again for backward;
        # stages 1/2 keep them gathered from forward to backward: more memory, less traffic.
        reshard = stage >= 3
        # Parameters are gathered in the compute dtype and gradients reduced in fp32.
        mp = MixedPrecisionPolicy(param_dtype=DTYPES[precision], reduce_dtype=torch.float32) \
            if precision != "fp32" else MixedPrecisionPolicy()
        for block in model.blocks:
            fully_shard(block, reshard_after_forward=reshard, mp_policy=mp)
        fully_shard(model, reshard_after_forward=reshard, mp_policy=mp)
        return model, f"fsdp2 (sharding stage {stage})"
    if world > 1:
        return data_parallel(model, runtime), "ddp"
    return model, "single"


def attention_backend_context(name: str):
    """A context choosing scaled_dot_product_attention's kernel: auto, flash, cudnn, efficient."""
    if name == "auto":
        return nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
                "efficient": SDPBackend.EFFICIENT_ATTENTION}
    if name not in backends:
        log(f"error: attention_backend must be auto, {', '.join(backends)}; got {name!r}")
        sys.exit(2)
    return sdpa_kernel([backends[name]])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="resolved config JSON written by harness")
    parser.add_argument("--data-prefix", required=True, help="path prefix of *_ids.npy/*_idx.npz")
    args = parser.parse_args()
    s, p, runtime = start_training(args.config)
    p = with_knob_defaults(p)  # a knob the params leave out: at its default
    device, world, rank = runtime.device, runtime.world, runtime.rank
    precision = s["precision"]
    # fp8 is declared by the vendor's backend (check_precision); on CUDA it needs compute
    # capability 8.9 (Ada/Hopper) or newer.
    if precision == "fp8" and device.type == "cuda" and runtime.device_module.get_device_capability(device) < (8, 9):
        log("error: fp8 training needs a GPU with fp8 tensor cores (compute capability 8.9 or newer)")
        return 2
    offload = str(p["offload"])
    if offload not in ("none", "cpu"):
        log(f"error: offload must be none or cpu; got {offload!r}")
        return 2
    if offload == "cpu" and precision == "fp16":
        log("error: offload=cpu runs in bf16 or fp32 (its host optimizer has no fp16 loss scaling)")
        return 2
    master_weights = str(p["master_weights"])
    if master_weights not in ("model", "optimizer"):
        log(f"error: master_weights must be model or optimizer; got {master_weights!r}")
        return 2
    if master_weights == "optimizer" and precision not in ("bf16", "fp8"):
        log(f"error: master_weights=optimizer runs in bf16 or fp8 (got precision {precision})")
        return 2
    if (offload == "cpu" or master_weights == "optimizer") and world > 1 and int(p["sharding_stage"]) > 0:
        # The flat optimizer owns the parameters; FSDP2 would shard them under it.
        log("error: offload=cpu and master_weights=optimizer train data parallel (every rank "
            "the whole model); sharding_stage needs offload=none and master_weights=model")
        return 2
    model = GPT(vocab_size=p["vocab_size"], seq_len=p["seq_len"], num_layers=p["num_layers"],
                hidden_size=p["hidden_size"], num_heads=p["num_heads"],
                ffn_multiplier=p["ffn_multiplier"], dropout=p["dropout"], init_std=p["init_std"],
                recompute=p["recompute"])
    n_params = model.num_parameters()
    # harness equivalence: the canonical initial state exported or loaded, before anything else
    equivalence = Equivalence.from_config(args.config, "pytorch", torch.__version__)
    if equivalence is not None:
        torch_equivalence.start(equivalence, model, s["micro_batch_size"] * p["seq_len"])
    if rank == 0:  # what was built and will run, before step 1: harness checks it
        print_readback(
            parameters=n_params, num_layers=len(model.blocks), hidden_size=model.wte.embedding_dim,
            num_heads=model.blocks[0].attn.heads, seq_len=model.wpe.num_embeddings,
            vocab_size=model.wte.num_embeddings, micro_batch_size=s["micro_batch_size"],
            grad_accum_steps=s["grad_accum_steps"], world_size=world,
            global_batch_size=s["micro_batch_size"] * s["grad_accum_steps"] * world,
            precision=precision, learning_rate=p["learning_rate"],
            min_learning_rate=p["min_learning_rate"], lr_warmup_steps=p["lr_warmup_steps"],
            lr_decay_steps=p["lr_decay_steps"], lr_warmup_tokens=p.get("lr_warmup_tokens"),
            lr_decay_tokens=p.get("lr_decay_tokens"), max_steps=s["max_steps"], seed=s["seed"],
            device_type=device.type)
    flops_per_token = gpt_training_flops_per_token(n_params, p["num_layers"], p["hidden_size"], p["seq_len"])
    # An optimizer that owns fp32 master copies of compute-dtype weights (master_weights.py):
    # in host memory (offload=cpu) or on the device (master_weights=optimizer).
    flat_optimizer = None
    if offload == "cpu" or master_weights == "optimizer":
        decay, no_decay = split_weight_decay(model)
        options = dict(device=device, dtype=DTYPES[precision], lr=p["learning_rate"],
                       betas=(p["adam_beta1"], p["adam_beta2"]), eps=1e-8,
                       weight_decay=p["weight_decay"])
        if offload == "cpu":
            from host_offload import HostOffloadAdamW

            flat_optimizer = HostOffloadAdamW(decay, no_decay, **options)
        else:
            from master_weights import DeviceMasterAdamW

            flat_optimizer = DeviceMasterAdamW(
                decay, no_decay, fused=bool(p["fused_optimizer"]) and fused_optimizer_kernels(device), **options)
        if master_weights == "model":
            # The residual stream in fp32, as the embeddings of an fp32 model give it, so that
            # offloading does not change the arithmetic of the configured in-device run;
            # master_weights=optimizer keeps it in the compute dtype, as Megatron-LM does.
            model.residual_dtype = torch.float32
    # The block linears' weight gradients added into the flat fp32 gradients by the matrix
    # product itself (Megatron-LM's gradient accumulation fusion), where the optimizer holds
    # them; fp8's linears are torchao's and hand autograd their gradients.
    fusion_off = ("off in the config" if not p["gradient_accumulation_fusion"]
                  else "no flat fp32 gradients (master_weights=model, no offload)" if flat_optimizer is None
                  else "fp8 linears" if precision == "fp8"
                  else weight_gradient_fusion_unavailable(device))
    if fusion_off is None:
        flat_optimizer.expose_main_grads()
        model.route_weight_gradients()
    model = model.to(device)
    if precision == "fp8":
        from fp8_training import convert_linears_to_float8

        swapped = convert_linears_to_float8(model)
        if rank == 0:
            log(f"> fp8: {swapped} block linears on torchao float8 (tensorwise scaling)")
    if p["compile"]:
        model.compile_layers()
    if flat_optimizer is None:
        model, parallel = wrap_parallel(model, p, runtime, precision)
    else:
        # The flat optimizer averages the ranks' gradients itself (master_weights.py).
        where = "host memory" if offload == "cpu" else "device memory"
        shared = ", the host update sharded over the ranks" if offload == "cpu" and world > 1 else ""
        parallel = (f"{'data parallel' if world > 1 else 'single'}, {precision} weights, fp32 master "
                    f"weights and AdamW states in {where}{shared}")
    optimizer = build_optimizer(model, p, device) if flat_optimizer is None else None
    train_model = model
    attention = attention_backend_context(str(p["attention_backend"]))
    attention.__enter__()  # for the whole run: compiled graphs pick their kernel when traced

    mbs, accum = s["micro_batch_size"], s["grad_accum_steps"]
    global_batch = mbs * accum * world
    order_seed = data_order_seed(s["seed"])  # the repeat's nonce in the data order
    dataset = GPTWindowDataset(args.data_prefix, p["seq_len"], order_seed, p["vocab_size"])
    sampler = DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=order_seed,
                                 drop_last=True)
    loader = DataLoader(dataset, batch_size=mbs, sampler=sampler, drop_last=True,
                        **runtime.loader_options(workers=2))

    def batches():
        epoch = 0
        while True:
            sampler.set_epoch(epoch)
            yield from loader
            epoch += 1

    if equivalence is not None:  # the neutral sample order every framework trains on
        def batches():
            for indices in equivalence.batches(len(dataset), mbs, s["seed"]):
                samples = [dataset[int(i)] for i in indices]
                yield torch.stack([x for x, _ in samples]), torch.stack([y for _, y in samples])

        inputs, targets = next(batches())
        torch_equivalence.record_activations(
            equivalence, [("embeddings", model.drop),
                          *((f"blocks.{i}", block) for i, block in enumerate(model.blocks)),
                          ("ln_f", model.ln_f)],
            lambda: model(inputs.to(device), targets.to(device)))
    data = batches()
    autocast = (torch.autocast(device.type, dtype=DTYPES[precision])
                if precision != "fp32" else nullcontext())
    scaler = torch.amp.GradScaler(device.type, enabled=precision == "fp16")
    max_steps, interval = s["max_steps"], max(1, int(p.get("log_interval", 1)))
    warmup_steps, decay_steps = schedule_steps(p, global_batch * p["seq_len"], max_steps)
    if rank == 0:
        log(f"> GPT: {n_params:,} parameters, {p['num_layers']} layers, hidden {p['hidden_size']}, "
            f"{p['num_heads']} heads, seq {p['seq_len']}, vocab {p['vocab_size']}")
        log(f"> training: {parallel} on {world} x {runtime.device_name}, precision {precision}, micro batch "
            f"{mbs}, grad accum {accum}, global batch {global_batch}, recompute {p['recompute']}, "
            f"compile {bool(p['compile'])}, attention {p['attention_backend']}, "
            f"offload {offload}, master weights "
            f"{'in the optimizer' if flat_optimizer is not None else 'are the parameters'}, "
            f"residual stream {precision if master_weights == 'optimizer' else 'fp32'}, "
            f"gradient accumulation fusion {'on' if fusion_off is None else f'off ({fusion_off})'}, "
            f"torch {torch.__version__}")
        log(f"> learning rate: peak {p['learning_rate']:g}, linear warm-up over {warmup_steps} steps, "
            f"cosine decay to {p['min_learning_rate']:g} at step {decay_steps}")

    train_model.train()
    consumed = 0
    skipped = nan_iters = 0
    interval_start = time.perf_counter()
    interval_loss = 0.0
    profiler = StepProfiler(rank, device.type, log)
    for step in range(1, max_steps + 1):
        profiler.begin(step)
        lr = lr_at(step, p["learning_rate"], warmup_steps, decay_steps, floor=p["min_learning_rate"])
        for group in optimizer.param_groups if optimizer is not None else ():
            group["lr"] = lr
        step_loss = torch.zeros((), device=device)
        for micro in range(accum):
            inputs, targets = next(data)
            inputs = inputs.to(device, non_blocking=True)
            targets = targets.to(device, non_blocking=True)
            # Gradients are all-reduced once per optimizer step, not per micro-batch.
            last = micro == accum - 1
            sync = nullcontext() if last or parallel != "ddp" else train_model.no_sync()
            if parallel.startswith("fsdp2") and accum > 1:
                train_model.set_requires_gradient_sync(last)
            with sync, autocast:
                loss = train_model(inputs, targets) / accum
            scaler.scale(loss).backward()
            step_loss += loss.detach()
        if equivalence is not None and step == 1:
            equivalence.gradients(torch_equivalence.grad_arrays(model))
        scale_before = scaler.get_scale() if scaler.is_enabled() else 1.0
        if flat_optimizer is not None:
            host_start = time.perf_counter()
            norm_value = flat_optimizer.step(lr, p["grad_clip"])
            if offload == "cpu" and rank == 0 and step <= 3:
                log(f"> host optimizer step {step}: {time.perf_counter() - host_start:.2f} s "
                    f"({flat_optimizer.updated_numel:,} fp32 parameters + 2 moments on the host"
                    + (f", this rank's share of {flat_optimizer.numel:,}" if world > 1 else "") + ")")
        else:
            grad_norm = optimizer_step(optimizer, scaler, model.parameters(), p["grad_clip"])
            # FSDP2 returns a DTensor: materialising it is a collective, so every rank does it.
            norm_value = float(grad_norm.full_tensor() if hasattr(grad_norm, "full_tensor") else grad_norm)
        if scaler.is_enabled() and scaler.get_scale() < scale_before:
            skipped += 1
        consumed += global_batch
        value = float(step_loss)  # also synchronises the device before timing
        if not math.isfinite(value):
            nan_iters += 1  # iterations, as Megatron-LM counts them (not logged intervals)
        interval_loss += value
        if equivalence is not None:
            equivalence.step(step, value)
        profiler.end(step)
        if step % interval == 0 or step == max_steps:
            if world > 1:
                reduced = torch.tensor([interval_loss], device=device)
                dist.all_reduce(reduced)
                interval_loss = float(reduced) / world
            elapsed = time.perf_counter() - interval_start
            steps_in_interval = interval if step % interval == 0 else step % interval
            per_iter_ms = 1000.0 * elapsed / steps_in_interval
            avg_loss = interval_loss / steps_in_interval
            tflops = flops_per_token * global_batch * p["seq_len"] / (per_iter_ms / 1000) / world / 1e12
            if rank == 0:
                log(f" iteration {step:8d}/{max_steps:8d} | consumed samples: {consumed:12d} | "
                    f"elapsed time per iteration (ms): {per_iter_ms:.1f} | "
                    f"throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | "
                    f"learning rate: {lr:.6E} | global batch size: {global_batch:5d} | "
                    f"lm loss: {avg_loss:.6E} | loss scale: {scaler.get_scale() if scaler.is_enabled() else 1.0:.1f} | "
                    f"grad norm: {norm_value:.3f} | number of skipped iterations: {skipped:3d} | "
                    f"number of nan iterations: {nan_iters:3d} |")
            interval_loss = 0.0
            interval_start = time.perf_counter()
    attention.__exit__(None, None, None)
    if equivalence is not None:
        equivalence.finish(torch_equivalence.state_arrays(model))
    finish_training(runtime, f"[Rank 0] (after {max_steps} iterations) ")
    return 0 if nan_iters == 0 else 1


if __name__ == "__main__":
    run_and_exit(main)
