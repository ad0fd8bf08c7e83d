"""GPT pre-training with Megatron-core: the training script the megatron plugin launches.

Run under ``python -m torch.distributed.run --nproc-per-node N`` (one process per GPU):
``train_megatron_gpt.py --config config.json --data-prefix P``. The model is Megatron-core's
``GPTModel`` (local spec: Megatron-core's own column/row-parallel linears and norms) with
tensor, pipeline and data parallelism from ``tensor_parallel_degree``,
``pipeline_parallel_degree`` and the rest of the world size; sequence parallelism with TP;
``sharding_stage >= 1`` turns on Megatron's distributed optimizer (optimizer state sharded
over data-parallel ranks, ZeRO-1). Prints Megatron-LM's own iteration lines.

The data are the harness GPT dataset (``*_ids.npy`` + ``*_idx.npz``) read by the torch
``Dataset`` the PyTorch plugin's script uses too (``harness_cases/shared_scripts/gpt_dataset.py``,
on PYTHONPATH), so both frameworks train on the same tokens in the same order.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn.functional as F

from device_backend import bound_collectives
from gpt_knobs import with_knob_defaults
from lr_schedule import lr_at, schedule_steps
from data_nonce import data_order_seed
from readback import print_readback
from step_profile import StepProfiler

#: Megatron-core is not device-agnostic (CUDA RNG tracker, fused kernels): the one torch
#: device type it runs on. The vendor's backend must declare it (the nvidia vendor does).
DEVICE_TYPE = "cuda"


def log(msg: str) -> None:
    print(msg, flush=True)


def sdpa_core_attention_class():
    """A Megatron-core core-attention module that runs torch's scaled_dot_product_attention.

    Megatron-core's local spec computes attention unfused (the full s x s score matrix);
    its flash path needs Transformer Engine. This module gives the local spec the flash
    kernel the PyTorch plugin uses, so that the two frameworks compare at equal settings.
    """
    from megatron.core import tensor_parallel
    from megatron.core.transformer.module import MegatronModule

    class SDPACoreAttention(MegatronModule):
        def __init__(self, config, layer_number, attn_mask_type, attention_type,
                     attention_dropout=None, softmax_scale=None, cp_comm_type=None,
                     pg_collection=None, **_):
            super().__init__(config=config)
            if config.context_parallel_size != 1:
                raise ValueError("SDPA core attention does not support context parallelism")
            self.dropout = config.attention_dropout if attention_dropout is None else attention_dropout
            self.softmax_scale = softmax_scale

        def forward(self, query, key, value, attention_mask, attn_mask_type=None,
                    attention_bias=None, packed_seq_params=None, **_):
            # [s, b, heads, d] -> [b, heads, s, d]
            q, k, v = (t.permute(1, 2, 0, 3) for t in (query, key, value))
            if k.size(1) != q.size(1):  # grouped-query attention
                k = k.repeat_interleave(q.size(1) // k.size(1), dim=1)
                v = v.repeat_interleave(q.size(1) // v.size(1), dim=1)
            dropout = self.dropout if self.training else 0.0

            def attend():
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout,
                                                      scale=self.softmax_scale)

            if dropout > 0 and not self.config.sequence_parallel:
                with tensor_parallel.get_cuda_rng_tracker().fork():
                    out = attend()
            else:
                out = attend()
            # [b, heads, s, d] -> [s, b, heads * d]
            return out.permute(2, 0, 1, 3).reshape(out.size(2), out.size(0), -1)

    return SDPACoreAttention


def sequence_parallel_layer_norm_class():
    """torch LayerNorm that Megatron-core's sequence parallelism can use.

    Megatron-core's own torch-norm wrapper refuses sequence parallelism (its fused norms need
    apex or Transformer Engine). With sequence parallelism every tensor-parallel rank normalises
    its own slice of the sequence, so the norm's gradients are partial sums: marking the
    parameters ``sequence_parallel`` makes ``finalize_model_grads`` all-reduce them over the
    tensor-parallel group, as it does for the fused norms.
    """

    class SequenceParallelLayerNorm(torch.nn.LayerNorm):
        def __init__(self, config, hidden_size: int, eps: float = 1e-5, **_):
            super().__init__(hidden_size, eps=eps)
            for param in self.parameters():
                setattr(param, "sequence_parallel", config.sequence_parallel)

    return SequenceParallelLayerNorm


def gradient_accumulation_fusion(p: dict) -> bool:
    """Whether Megatron-core adds weight gradients into its fp32 buffers inside the matrix
    product: asked for by the case and possible, which needs apex's CUDA extension."""
    if not p["gradient_accumulation_fusion"]:
        return False
    try:
        import fused_weight_gradient_mlp_cuda  # noqa: F401  (apex)
    except ImportError:
        return False
    return True


def build_model(p: dict, tp: int, pp: int, precision: str, fuse_weight_gradients: bool,
                device: torch.device | None = None):
    """The GPTModel of the case on ``device`` (default: this process's accelerator)."""
    from megatron.core import parallel_state
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    from megatron.core.transformer.module import Float16Module
    from megatron.core.transformer.transformer_config import TransformerConfig

    recompute = p["recompute"]
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[precision]
    config = TransformerConfig(
        num_layers=p["num_layers"],
        hidden_size=p["hidden_size"],
        num_attention_heads=p["num_heads"],
        ffn_hidden_size=p["ffn_multiplier"] * p["hidden_size"],
        hidden_dropout=p["dropout"],
        attention_dropout=p["dropout"],
        init_method_std=p["init_std"],
        tensor_model_parallel_size=tp,
        pipeline_model_parallel_size=pp,
        sequence_parallel=tp > 1,
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        params_dtype=dtype,
        pipeline_dtype=dtype,
        # Fusions that need no apex or Transformer Engine (bias+GeLU, bias+dropout+add are
        # torch.jit); gradient-accumulation fusion needs apex's CUDA extension.
        bias_activation_fusion=True,
        bias_dropout_fusion=True,
        masked_softmax_fusion=False,
        gradient_accumulation_fusion=fuse_weight_gradients,
        persist_layer_norm=False,
        recompute_granularity={"none": None, "full": "full", "selective": "selective"}[recompute],
        recompute_method="uniform" if recompute == "full" else None,
        recompute_num_layers=1 if recompute == "full" else None,
        use_cpu_initialization=device is not None and device.type == "cpu",
    )
    layer = get_gpt_layer_local_spec()
    backend = str(p["attention_backend"])
    if backend != "local":
        layer.submodules.self_attention.submodules.core_attention = sdpa_core_attention_class()
    norm = sequence_parallel_layer_norm_class()
    layer.submodules.input_layernorm = norm
    layer.submodules.pre_mlp_layernorm = norm
    from megatron.core.transformer.transformer_block import (TransformerBlockSubmodules,
                                                             get_num_layers_to_build)

    stage_layers = get_num_layers_to_build(config, pp_rank=parallel_state.get_pipeline_model_parallel_rank())
    spec = TransformerBlockSubmodules(layer_specs=[layer] * stage_layers, layer_norm=norm)
    model = GPTModel(
        config=config,
        transformer_layer_spec=spec,
        vocab_size=p["vocab_size"],
        max_sequence_length=p["seq_len"],
        pre_process=parallel_state.is_pipeline_first_stage(),
        post_process=parallel_state.is_pipeline_last_stage(),
        share_embeddings_and_output_weights=True,
        position_embedding_type="learned_absolute",
    )
    model.to(device or torch.device(DEVICE_TYPE, torch.get_device_module(DEVICE_TYPE).current_device()))
    if precision != "fp32":
        model = Float16Module(config, model)  # as Megatron-LM: bf16/fp16 weights, fp32 main params
    return model, config


def whole_model_parameters(model, parallel_state) -> int:
    """Parameters of the whole model, each counted once (a collective over the model-parallel
    group): a tensor-parallel shard (``tensor_model_parallel``) counts on every tensor rank,
    a replicated parameter (LayerNorms, row-parallel biases) on tensor rank 0 only, and the
    last pipeline stage's copy of the tied embedding (``shared_embedding``) not at all."""
    first_stage = parallel_state.is_pipeline_first_stage()
    tp_rank = parallel_state.get_tensor_model_parallel_rank()
    local = sum(t.numel() for t in model.parameters()
                if (getattr(t, "tensor_model_parallel", False) or tp_rank == 0)
                and not (getattr(t, "shared_embedding", False) and not first_stage))
    total = torch.tensor([local], dtype=torch.int64, device="cuda")
    dist.all_reduce(total, group=parallel_state.get_model_parallel_group())
    return int(total.item())


def use_fused_torch_adam(optimizer, fused: bool) -> int:
    """Run Megatron-core's fallback optimizer on torch's fused AdamW kernel (``fused_optimizer``,
    true in every case); returns how many optimizers run it. ``fused=False`` leaves torch's
    multi-tensor (foreach) mode, Megatron-core's own choice without Transformer Engine or apex.

    Without Transformer Engine or apex, Megatron-core builds ``torch.optim.AdamW`` in its
    default multi-tensor (foreach) mode, whose temporaries (a copy of every second moment,
    27 GB for gpt3_6.7B) do not fit one H200 beside 18 bytes a parameter of states. The fused
    kernel is what TE's or apex's FusedAdam would give Megatron-core: the same AdamW update in
    one pass, without the temporaries. torch reads these flags at every ``step``.
    """
    switched = 0
    if not fused:
        return switched
    for wrapper in getattr(optimizer, "chained_optimizers", [optimizer]):
        inner = getattr(wrapper, "optimizer", None)
        if isinstance(inner, torch.optim.Adam | torch.optim.AdamW):  # AdamW subclasses Adam
            for group in inner.param_groups:
                group["foreach"], group["fused"] = False, True
            switched += 1
    return switched


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True, help="resolved config JSON written by harness")
    parser.add_argument("--data-prefix", required=True, help="path prefix of *_ids.npy/*_idx.npz")
    parser.add_argument("--flops-per-token", type=float, required=True,
                        help="model training FLOPs per token, for the TFLOP/s/GPU in the log")
    args = parser.parse_args()
    with open(args.config, encoding="utf-8") as handle:
        cfg = json.load(handle)
    s, p = cfg["settings"], cfg["params"]
    p = with_knob_defaults(p)  # a knob the params leave out: at its default
    backend = (cfg.get("device") or {}).get("frameworks", {}).get("torch") or {}
    if cfg.get("equivalence") is not None and backend.get("device_type") == "cpu":
        # harness equivalence on the CPU: one process, Megatron-core's GPTModel with the fp32
        # update of its wrappers restated (they allocate on CUDA); megatron_equivalence_training.py
        from equivalence import Equivalence
        from megatron_equivalence_training import train
        from megatron.core import __version__ as megatron_version

        if int(os.environ.get("WORLD_SIZE", "1")) != 1:
            log("error: Megatron-core's CPU equivalence run is one process (--nproc 1)")
            return 2
        return train(Equivalence.from_config(args.config, "megatron", megatron_version), cfg, p,
                     args.data_prefix, args.flops_per_token, build_model, log)
    if backend.get("device_type") != DEVICE_TYPE:
        # Megatron-core's tensor-parallel RNG tracker, fused kernels and NCCL groups are CUDA's.
        log(f"error: Megatron-core runs on CUDA devices only; the vendor's torch device type is "
            f"{backend.get('device_type')!r}. Use --framework pytorch on this vendor")
        return 2
    accelerator = torch.get_device_module(DEVICE_TYPE)
    if not accelerator.is_available():
        log("error: Megatron-core needs NVIDIA GPUs (NCCL); none is visible")
        return 2

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(DEVICE_TYPE, local_rank)
    accelerator.set_device(device)
    # 'high' lets fp32 matmuls use TF32, as the nvidia backend declares.
    torch.set_float32_matmul_precision(cfg["device"].get("float32_matmul_precision", "highest"))
    bound_collectives()
    dist.init_process_group(backend.get("dist_backend") or "nccl", device_id=device,
                            timeout=timedelta(seconds=float(s["rendezvous_timeout_s"])))

    from megatron.core import parallel_state, tensor_parallel
    from megatron.core.distributed import (DistributedDataParallel, DistributedDataParallelConfig,
                                           finalize_model_grads)
    from megatron.core.optimizer import OptimizerConfig, get_megatron_optimizer
    from megatron.core.pipeline_parallel import get_forward_backward_func
    from torch.utils.data import DataLoader, DistributedSampler

    from gpt_dataset import GPTWindowDataset

    # The plugin refused, before the launch, degrees that do not divide the world size, the
    # layers, heads and vocabulary (harness_megatron.plugin.unsupported_reason).
    tp, pp = int(p["tensor_parallel_degree"]), int(p["pipeline_parallel_degree"])
    dp = world // (tp * pp)
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=tp,
                                             pipeline_model_parallel_size=pp)
    tensor_parallel.model_parallel_cuda_manual_seed(s["seed"])
    torch.manual_seed(s["seed"])
    precision = s["precision"]

    fuse_weight_gradients = gradient_accumulation_fusion(p)  # asked once: it tries an import
    model, config = build_model(p, tp, pp, precision, fuse_weight_gradients)
    n_local = sum(t.numel() for t in model.parameters())
    n_params = whole_model_parameters(model, parallel_state)
    distributed_optimizer = int(p["sharding_stage"]) >= 1 and dp > 1
    ddp_config = DistributedDataParallelConfig(
        grad_reduce_in_fp32=True,
        overlap_grad_reduce=dp > 1,
        use_distributed_optimizer=distributed_optimizer,
    )
    model = DistributedDataParallel(config=config, ddp_config=ddp_config, module=model)
    config.no_sync_func = model.no_sync
    config.finalize_model_grads_func = finalize_model_grads
    optimizer = get_megatron_optimizer(
        OptimizerConfig(
            optimizer="adam", lr=p["learning_rate"], min_lr=p["min_learning_rate"],
            weight_decay=p["weight_decay"], adam_beta1=p["adam_beta1"], adam_beta2=p["adam_beta2"],
            adam_eps=1e-8, clip_grad=p["grad_clip"], bf16=precision == "bf16",
            fp16=precision == "fp16", params_dtype=torch.float32 if precision == "fp32" else
            {"bf16": torch.bfloat16, "fp16": torch.float16}[precision],
            use_distributed_optimizer=distributed_optimizer,
            initial_loss_scale=2.0 ** 16 if precision == "fp16" else None,
        ),
        [model],
    )
    fused = use_fused_torch_adam(optimizer, bool(p["fused_optimizer"]))
    if rank == 0:
        kernel = f"fused kernel ({fused} optimizer(s))" if fused else "multi-tensor (foreach) kernel"
        log(f"> optimizer: torch AdamW, {kernel}; no Transformer Engine or apex")

    mbs, accum = s["micro_batch_size"], s["grad_accum_steps"]
    global_batch = mbs * accum * dp
    seq = p["seq_len"]
    dp_rank = parallel_state.get_data_parallel_rank()
    order_seed = data_order_seed(s["seed"])  # the repeat's nonce in the data order
    dataset = GPTWindowDataset(args.data_prefix, seq, order_seed, p["vocab_size"])
    sampler = DistributedSampler(dataset, num_replicas=dp, rank=dp_rank, shuffle=True,
                                 seed=order_seed, drop_last=True)
    loader = DataLoader(dataset, batch_size=mbs, sampler=sampler, drop_last=True, num_workers=2,
                        pin_memory=True, persistent_workers=True)

    def batches():
        epoch = 0
        while True:
            sampler.set_epoch(epoch)
            yield from loader
            epoch += 1

    data = batches()
    positions = torch.arange(seq, device=device).unsqueeze(0).expand(mbs, -1)

    def forward_step(data_iterator, model_chunk):
        tokens, labels = next(data_iterator)
        tokens = tokens.to(device, non_blocking=True)
        labels = labels.to(device, non_blocking=True)
        output = model_chunk(tokens, positions, None, labels=labels)  # per-token loss [b, s]

        def loss_func(per_token_loss):
            loss = per_token_loss.float().mean()
            # A copy: Megatron-core divides the returned loss by the number of micro-batches in
            # place, and a detached view would report the loss divided by the accumulation.
            return loss, {"lm loss": loss.detach().clone()}

        return output, loss_func

    forward_backward = get_forward_backward_func()
    last_stage = parallel_state.is_pipeline_last_stage()
    # One rank prints: the last pipeline stage holds the loss (Megatron-LM prints there too).
    printer = last_stage and parallel_state.get_tensor_model_parallel_rank() == 0 and dp_rank == 0
    if printer:  # what was built and will run, before step 1: harness checks it
        print_readback(
            model="gpt", parameters=n_params, num_layers=config.num_layers,
            hidden_size=config.hidden_size, num_heads=config.num_attention_heads, seq_len=seq,
            vocab_size=p["vocab_size"], micro_batch_size=mbs, grad_accum_steps=accum,
            global_batch_size=global_batch, world_size=world, precision=precision,
            learning_rate=p["learning_rate"], min_learning_rate=p["min_learning_rate"],
            lr_warmup_steps=p["lr_warmup_steps"], lr_decay_steps=p["lr_decay_steps"],
            lr_warmup_tokens=p.get("lr_warmup_tokens"), lr_decay_tokens=p.get("lr_decay_tokens"),
            tensor_parallel_degree=tp, pipeline_parallel_degree=pp, max_steps=s["max_steps"],
            seed=s["seed"], device_type=DEVICE_TYPE)
    if printer:
        log(f"> Megatron-core GPT: {p['num_layers']} layers, hidden {p['hidden_size']}, "
            f"{p['num_heads']} heads, seq {seq}, vocab {p['vocab_size']}; {n_local:,} parameters "
            f"on this rank")
        fusion = ("on" if fuse_weight_gradients else "off (needs apex's extension)"
                  if p["gradient_accumulation_fusion"] else "off")
        log(f"> training: megatron-core on {world} x {DEVICE_TYPE}: dp {dp} x tp {tp} x pp {pp}, "
            f"sequence parallel {tp > 1}, distributed optimizer {distributed_optimizer}, precision "
            f"{precision}, micro batch {mbs}, micro-batches per step {accum}, global batch "
            f"{global_batch}, recompute {p['recompute']}, attention "
            f"{p['attention_backend']}, gradient accumulation fusion {fusion}, "
            f"torch {torch.__version__}")
    flops_per_token = args.flops_per_token

    max_steps = s["max_steps"]
    warmup_steps, decay_steps = schedule_steps(p, global_batch * seq, max_steps)
    if printer:
        log(f"> learning rate: peak {p['learning_rate']:g}, linear warm-up over {warmup_steps} steps, "
            f"cosine decay to {p['min_learning_rate']:g} at step {decay_steps}")
    consumed = nan_iters = skipped = 0
    model.train()
    profiler = StepProfiler(rank, DEVICE_TYPE, log)  # HARNESS_PROFILE_STEPS, diagnostics only
    for step in range(1, max_steps + 1):
        profiler.begin(step)
        started = time.perf_counter()
        lr = lr_at(step, p["learning_rate"], warmup_steps, decay_steps, floor=p["min_learning_rate"])
        for group in optimizer.param_groups:
            group["lr"] = lr
            # Weight decay as Megatron-LM's OptimizerParamScheduler sets it: none on biases and
            # norms (wd_mult 0), as the PyTorch and Paddle GPT scripts decay matrices only.
            group["weight_decay"] = p["weight_decay"] * group.get("wd_mult", 1.0)
        model.zero_grad_buffer()
        optimizer.zero_grad()
        losses = forward_backward(forward_step_func=forward_step, data_iterator=data, model=model,
                                  num_microbatches=accum, seq_length=seq, micro_batch_size=mbs,
                                  decoder_seq_length=seq, forward_only=False)
        update_ok, grad_norm, _ = optimizer.step()
        if not update_ok:
            skipped += 1
        loss = torch.zeros((), device=device)
        if last_stage and losses:
            loss = torch.stack([x["lm loss"] for x in losses]).mean()
            dist.all_reduce(loss, group=parallel_state.get_data_parallel_group())
            loss /= dp
        value = float(loss)  # synchronises the device before the time is read
        accelerator.synchronize()
        elapsed_ms = 1000.0 * (time.perf_counter() - started)
        profiler.end(step)
        consumed += global_batch
        if last_stage and not math.isfinite(value):
            nan_iters += 1
        if printer:
            tflops = flops_per_token * global_batch * seq / (elapsed_ms / 1000) / world / 1e12
            log(f" iteration {step:8d}/{max_steps:8d} | consumed samples: {consumed:12d} | "
                f"elapsed time per iteration (ms): {elapsed_ms:.1f} | "
                f"throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | learning rate: {lr:.6E} | "
                f"global batch size: {global_batch:5d} | lm loss: {value:.6E} | "
                f"loss scale: {optimizer.get_loss_scale().item():.1f} | "
                f"grad norm: {float(grad_norm or 0.0):.3f} | "
                f"number of skipped iterations: {skipped:3d} | "
                f"number of nan iterations: {nan_iters:3d} |")
    allocated = accelerator.max_memory_allocated() / 2**20
    reserved = accelerator.max_memory_reserved() / 2**20
    # Megatron-LM's memory report, one line per rank; the harness keeps the largest.
    log(f"[Rank {rank}] (after {max_steps} iterations) memory (MB) | allocated: "
        f"{accelerator.memory_allocated() / 2**20:.1f} | max allocated: {allocated:.1f} | "
        f"reserved: {accelerator.memory_reserved() / 2**20:.1f} | max reserved: {reserved:.1f}")
    dist.barrier()
    if rank == 0:
        log("> training finished")
    parallel_state.destroy_model_parallel()
    dist.destroy_process_group()
    return 0 if nan_iters == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
