"""Per-GPU peak memory of the PyTorch plugin's GPT training script (train_gpt.py).

Counted from the resolved config, for the memory planner (the ``memory_plan`` hook). N is the
parameter count from the model's shape (tied embeddings counted once). Components, in bytes:

- weights: fp32 (4N), or with ``offload=cpu`` the compute dtype (2N in bf16); FSDP2 stage 3
  shards them (4N / world); with ``master_weights=optimizer`` the compute dtype (2N) plus the
  optimizer's fp32 master copy (4N);
- gradients: fp32 (4N), sharded over the ranks by FSDP2 (any stage);
- optimizer states: AdamW's two fp32 moments (8N), sharded by FSDP2; none with ``offload=cpu``
  (master weights and moments live in host memory);
- compute-dtype weight copies: autocast's bf16/fp16 casts of every matrix, saved for backward
  (2N; fp8 casts, N, with ``precision=fp8``, also when the weights are bf16 already); FSDP2
  gathers them instead (2N unsharded for stages 1/2, two blocks' worth for stage 3);
- activations of one micro-batch: ``ACTIVATION_BYTES[recompute]`` bytes per token, per layer
  and per hidden unit (b·s·h·L) in bf16/fp16, twice that in fp32; with full recompute, each
  block's fp32 input plus one block's full activations;
- the output head: logits and their fp32 copy and gradient, ``LOGIT_BYTES`` per token and
  vocabulary entry (b·s·V) when compiled, ``LOGIT_BYTES_EAGER`` when not (``compile = false``).

The coefficients are fitted to measured peaks, not derived: gpt3_6.7B at micro batch 2 and
gpt3_1.3B at micro batch 8 and 16, with fp32 parameters and with ``master_weights=optimizer``
(tests/plugins/harness_pytorch/test_gpt_memory.py keeps those peaks and the tolerance every
estimate meets).
"""

from __future__ import annotations

from harness.models.memory import MemoryCandidate, MemoryEstimate, MemoryPlan
from harness_cases.gpt_candidate_speed import HALVED_BATCH_SPEED, RECOMPUTE_SPEED
from harness_cases.gpt_flops import gpt_parameter_count
from harness_cases.gpt_knobs import GptKnobs

# Bytes per b·s·h·L of saved activations in a compiled block with flash attention, bf16, with
# the residual stream in fp32 (fp32 parameters, or offload with master_weights=model). Fitted
# for "none" (two sizes, micro batches 2-16); "selective" and "full" are estimates, unmeasured.
ACTIVATION_BYTES = {"none": 35.4, "selective": 14.0, "full": 4.0}
# A residual stream in the compute dtype (master_weights=optimizer) saves its bf16 values for
# the LayerNorms' backward instead of fp32: 2 bytes less per b·s·h·L (the fit agrees).
COMPUTE_RESIDUAL_SAVING = 2.0
# Bytes per b·s·V of the output head live at the peak, fitted. Less than the bf16 logits
# themselves (2): the compiled head's logits and their gradient are not all live when the
# blocks' activations peak.
LOGIT_BYTES = 1.25
# Uncompiled (compile = false), the eager loss keeps the bf16 logits, their fp32 copy and the
# log-softmax saved for backward. Fitted to one measured peak and one out-of-memory bound, both
# gpt3_1.3B bf16 on one H100: micro batch 8 with fp32 parameters, and micro batch 16 with
# master_weights=optimizer, which ran out of memory where the compiled coefficient predicted
# it would fit.
LOGIT_BYTES_EAGER = 7.0
LOGIT_BYTES_FP32 = 8.0  # fp32 logits and their gradient, uncompiled: counted, not measured
COMPUTE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 2}  # fp8 runs bf16 autocast around fp8 GEMMs
# fp8 (torchao tensorwise): the block matrices' saved casts are fp8 (1 byte, N), and the
# activations saved for backward shrink to this fraction of bf16's. Fitted to one measured
# point: gpt3_6.7B, micro batch 2, one H200.
FP8_ACTIVATION_FRACTION = 0.3
# Relative speed of offloading the optimizer, used only to order the candidates (fastest
# first), beside the shared recompute and micro-batch ones.
OFFLOAD_SPEED = 0.75
# With the optimizer in host memory, its step (seconds for billions of parameters) is paid once
# per optimizer step: at least this many micro-batches amortise it.
OFFLOAD_MIN_MICRO_BATCHES = 64


def gpt_parameters(p: dict) -> int:
    """N of train_gpt.py's GPT (the case catalog's count, which MFU uses too)."""
    return gpt_parameter_count(num_layers=int(p["num_layers"]), hidden_size=int(p["hidden_size"]),
                               vocab_size=int(p["vocab_size"]), seq_len=int(p["seq_len"]),
                               ffn_multiplier=int(p.get("ffn_multiplier", 4)))


def estimate(p: dict, *, precision: str, micro_batch: int, world: int, offload: str,
             recompute: str, master_weights: str = "model") -> MemoryEstimate:
    n = gpt_parameters(p)
    h, layers, seq, vocab = (int(p[k]) for k in ("hidden_size", "num_layers", "seq_len", "vocab_size"))
    stage = GptKnobs.of(p).sharding_stage if world > 1 else 0
    compute = COMPUTE_BYTES.get(precision, 4)
    shard = world if stage > 0 else 1
    block = 12 * h * h  # one block's matrices
    master = 0  # fp32 master weights beside compute-dtype ones (master_weights=optimizer)
    if offload == "cpu":
        weights, grads, states, copies = compute * n, 4 * n, 0, 0
        formula = f"{compute}N weights + 4N fp32 gradients on the GPU (AdamW in host memory)"
    elif master_weights == "optimizer":
        weights, master, grads, states = compute * n, 4 * n, 4 * n, 8 * n
        copies = n if precision == "fp8" else 0
        formula = f"{compute}N weights + 4N fp32 master weights + 4N gradients + 8N AdamW"
    else:
        weights = 4 * n // (world if stage >= 3 else 1)
        grads, states = 4 * n // shard, 8 * n // shard
        per_weight = 1 if precision == "fp8" else 2
        copies = 0 if compute == 4 else (2 * per_weight * block if stage >= 3 else per_weight * n)
        formula = "4N weights + 4N gradients + 8N AdamW" + (f" over {shard} shards" if shard > 1 else "")
    scale = (FP8_ACTIVATION_FRACTION if precision == "fp8" else 1.0) if compute == 2 else 2.0
    tokens = micro_batch * seq
    per_block = ACTIVATION_BYTES["none"] - (COMPUTE_RESIDUAL_SAVING if master_weights == "optimizer" else 0.0)
    if recompute == "full":
        act = tokens * h * layers * ACTIVATION_BYTES["full"] + tokens * h * per_block * scale
    elif recompute == "none":
        act = tokens * h * layers * per_block * scale
    else:
        act = tokens * h * layers * ACTIVATION_BYTES.get(recompute, per_block) * scale
    logit_bytes = LOGIT_BYTES_FP32 if compute == 4 else (LOGIT_BYTES if GptKnobs.of(p).compile else LOGIT_BYTES_EAGER)
    logits = tokens * vocab * logit_bytes
    components = {"weights": weights, "master weights": master, "gradients": grads, "optimizer states": states,
                  "compute-dtype weights": copies, "activations": int(act), "logits": int(logits)}
    return MemoryEstimate(
        total_bytes=sum(components.values()), components=components,
        formula=f"N={n:,}: {formula} + activations "
                f"{per_block if recompute == 'none' else ACTIVATION_BYTES.get(recompute, per_block):g}·b·s·h·L "
                f"(recompute {recompute}) + logits {logit_bytes:g}·b·s·V")


def memory_plan(params: dict, settings, usable_hint: int | None = None) -> MemoryPlan:
    """The config as resolved, then smaller-memory variants of it, fastest first."""
    precision, world = settings.precision, settings.world_size
    mbs, accum = settings.micro_batch_size, settings.grad_accum_steps
    knobs = GptKnobs.of(params)
    offload, recompute, master_weights = knobs.offload, knobs.recompute, knobs.master_weights

    def est(**kw) -> MemoryEstimate:
        args = dict(precision=precision, micro_batch=mbs, world=world, offload=offload,
                    recompute=recompute, master_weights=master_weights)
        args.update(kw)
        return estimate(params, **args)

    options: list[tuple[float, MemoryCandidate]] = [
        (2.0, MemoryCandidate(estimate=est(), label="as configured"))]
    offloads = ["none", "cpu"] if precision != "fp16" else [offload]
    # Offloaded, every rank holds the whole model (data parallel, the host update sharded):
    # a sharded config gives up its sharding for it.
    unshard = {"sharding_stage": 0} if world > 1 and knobs.sharding_stage > 0 else {}
    for off in offloads:
        for rec in ("none", "selective", "full"):
            batch, halvings = mbs, 0
            while batch >= 1:
                overrides: dict = {}
                if rec != recompute:
                    overrides["recompute"] = rec
                if batch != mbs:
                    overrides["micro_batch_size"] = batch
                micro_batches = accum * (mbs // batch)
                if off != offload:
                    overrides["offload"] = off
                    if off == "cpu":
                        micro_batches = max(micro_batches, OFFLOAD_MIN_MICRO_BATCHES)
                        overrides.update(unshard)
                if micro_batches != accum:
                    overrides["grad_accum_steps"] = micro_batches
                if overrides:
                    speed = (RECOMPUTE_SPEED[rec] * HALVED_BATCH_SPEED ** halvings
                             * (OFFLOAD_SPEED if off == "cpu" and offload != "cpu" else 1.0))
                    label = ", ".join(f"{k}={v}" for k, v in overrides.items())
                    options.append((speed, MemoryCandidate(
                        overrides=overrides, label=label,
                        estimate=est(micro_batch=batch, offload=off, recompute=rec))))
                batch //= 2
                halvings += 1
    options.sort(key=lambda item: -item[0])  # stable: the resolved config stays first
    hints = []
    if world == 1 and usable_hint is not None:
        for gpus in (2, 4, 8):
            sharded = estimate({**params, "sharding_stage": 3}, precision=precision, micro_batch=1,
                               world=gpus, offload="none", recompute="full")
            if sharded.total_bytes <= usable_hint:
                hints.append(f">= {gpus} GPUs of this size (FSDP2 sharding stage 3, micro batch 1, "
                             f"full recompute: about {sharded.total_bytes / 2**30:,.0f} GiB each)")
                break
    return MemoryPlan(candidates=[c for _, c in options], hints=hints)
