"""Per-GPU peak memory of the Megatron-core plugin's GPT script (train_megatron_gpt.py).

Counted from the resolved config, for the memory planner (the ``memory_plan`` hook); it needs
no Megatron-core. A rank holds the parameters of its pipeline stage's layers split over the
tensor-parallel ranks (``rank_parameters``: N_rank); its peak is that of the stage that needs
most. Components, in bytes:

- weights: the compute dtype (2·N_rank in bf16/fp16: Megatron-core's Float16Module), fp32 (4)
  in fp32;
- master weights: in bf16/fp16 the optimizer's fp32 copy (4·N_rank), sharded over the
  data-parallel ranks by the distributed optimizer (``sharding_stage >= 1`` and dp > 1);
  in fp32 the weights are the masters;
- gradients: the DDP wrapper's fp32 buffer (``grad_reduce_in_fp32``: 4·N_rank), never sharded;
- optimizer states: AdamW's two fp32 moments (8·N_rank), sharded like the masters;
- activations: ``ACTIVATION_BYTES`` per b·s·h·L_stage / tp (sequence parallelism splits all
  of them over the tensor ranks), ``DROPOUT_BYTES`` more with dropout, for every micro-batch
  the stage holds at once (1F1B: the first of pp stages holds pp, the last one);
  ``attention_backend=local`` (unfused attention) adds its score matrices, ``SCORE_BYTES``
  per b·heads·s² / tp and layer; ``recompute=full`` keeps each layer's bf16 input and one
  layer's activations instead;
- logits, on the last stage: ``LOGIT_BYTES`` per b·s·V / tp (the bf16 logits and the
  cross entropy's fp32 copy);
- with ``fused_optimizer = false``, torch's multi-tensor (foreach) AdamW allocates a copy of
  every second moment in its step (4 bytes a parameter it updates), when the activations are
  gone: the peak is the states plus the larger of the two.

The three fitted coefficients come from distinct configs' measured peaks (torch
max_memory_allocated, the largest rank's) on H100 and H200: 1, 2 and 4 GPUs, tensor parallel 2
and 4, pipeline parallel 4, the distributed optimizer, gpt3_1.3B at micro batch 8 and 16,
gpt3_6.7B at 2 (tests/plugins/harness_megatron/test_megatron_memory.py keeps the table and the
tolerance every one meets). Full recompute,
local attention, fp32 and the foreach temporaries are counted from the script's code path,
not fitted.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from harness.models.memory import MemoryCandidate, MemoryEstimate, MemoryPlan
from harness_cases.gpt_candidate_speed import HALVED_BATCH_SPEED, RECOMPUTE_SPEED
from harness_cases.gpt_knobs import GptKnobs

GIB = 2**30
# Bytes per b·s·h·L (per tensor rank) saved by a block in bf16 with SDPA attention and no
# dropout. Fitted (gpt3_1.3B micro batch 8 and 16, gpt3_6.7B micro batch 2); close to
# Korthikanti et al.'s count without the score matrices and dropout masks (32).
ACTIVATION_BYTES = 32.4
# More with dropout > 0 (the matrix cases' 0.1), of which the two hidden dropouts' one-byte
# masks are 2. Fitted (hidden 768/1536, micro batch 2-16, tp 1/2/4, pp 4).
DROPOUT_BYTES = 3.1
# Bytes per b·s·V (per tensor rank) on the last stage: bf16 logits and the fp32 copy the
# vocab-parallel cross entropy keeps for backward. Fitted with the two above.
LOGIT_BYTES = 5.85
# fp32: activations twice bf16's; logits and their fp32 gradient (counted, not measured).
FP32_ACTIVATION_SCALE = 2.0
LOGIT_BYTES_FP32 = 8.0
# attention_backend=local: Megatron-core's unfused attention keeps, per score element
# (b·heads·s² / tp a layer), the fp32 softmax output (attention_softmax_in_fp32) and the bf16
# probabilities the value matmul saves, plus the dropout mask's byte (counted, not measured).
SCORE_BYTES = 6.0
SCORE_DROPOUT_BYTES = 1.0
# recompute=full (uniform, one layer a checkpoint): each layer's bf16 input (counted).
CHECKPOINT_INPUT_BYTES = 2.0
# torch's foreach AdamW: a copy of every second moment during the step (fp32, counted; it ran
# gpt3_6.7B out of memory on one H200 in _multi_tensor_adam).
FOREACH_TEMP_BYTES = 4
COMPUTE_BYTES = {"fp32": 4, "bf16": 2, "fp16": 2}
RECOMPUTE_ORDER = ("none", "selective", "full")  # less memory to the right
# Relative speed of sharding the optimizer, used only to order the candidates (fastest first),
# beside the shared recompute and micro-batch ones.
DISTRIBUTED_OPTIMIZER_SPEED = 0.98


@dataclass(frozen=True)
class Layout:
    """The process layout train_megatron_gpt.py builds from the config."""

    world: int
    tp: int
    pp: int
    sharding_stage: int

    @property
    def dp(self) -> int:
        return self.world // (self.tp * self.pp)

    @property
    def optimizer_shards(self) -> int:
        """Ranks the distributed optimizer splits the masters and moments over."""
        return self.dp if self.sharding_stage >= 1 and self.dp > 1 else 1


def layout_of(p: dict, world: int) -> Layout:
    knobs = GptKnobs.of(p)
    return Layout(world=world, tp=knobs.tensor_parallel_degree, pp=knobs.pipeline_parallel_degree,
                  sharding_stage=knobs.sharding_stage)


def rank_parameters(p: dict, tp: int, pp: int, stage: int) -> int:
    """Parameters one rank of pipeline stage ``stage`` holds (GPTModel, local spec).

    Per layer the QKV and MLP-in matrices and their biases are column parallel, the projection
    and MLP-out matrices row parallel (their biases replicated), the two LayerNorms replicated.
    The first stage holds the vocabulary-parallel word embedding and the (replicated) learned
    positions, the last the final LayerNorm and, with pp > 1, its own copy of the tied
    word embedding for the output layer.
    """
    h, m = int(p["hidden_size"]), int(p.get("ffn_multiplier", 4))
    vocab, seq = int(p["vocab_size"]), int(p["seq_len"])
    per_layer = (4 + 2 * m) * h * h // tp + (3 + m) * h // tp + 2 * h + 4 * h
    n = int(p["num_layers"]) // pp * per_layer
    if stage == 0:
        n += vocab * h // tp + seq * h
    if stage == pp - 1:
        n += 2 * h + (vocab * h // tp if pp > 1 else 0)
    return n


def stage_estimate(p: dict, *, precision: str, micro_batch: int, micro_batches: int,
                   layout: Layout, recompute: str, stage: int) -> MemoryEstimate:
    """Peak of one rank of pipeline stage ``stage``."""
    tp, pp = layout.tp, layout.pp
    n = rank_parameters(p, tp, pp, stage)
    shards = layout.optimizer_shards
    h, seq, vocab = int(p["hidden_size"]), int(p["seq_len"]), int(p["vocab_size"])
    heads, layers = int(p["num_heads"]), int(p["num_layers"]) // pp
    dropout = float(p.get("dropout", 0.0) or 0.0) > 0
    fp32 = precision == "fp32"
    weights = COMPUTE_BYTES.get(precision, 2) * n
    master = 0 if fp32 else 4 * n // shards
    grads, states = 4 * n, 8 * n // shards

    in_flight = min(pp - stage, micro_batches)  # 1F1B warm-up: pp - stage micro-batches
    tokens = micro_batch * seq * in_flight  # per stage, before the tensor split
    scale = FP32_ACTIVATION_SCALE if fp32 else 1.0
    per_block = (ACTIVATION_BYTES + (DROPOUT_BYTES if dropout else 0.0)) * scale
    scores = 0.0
    knobs = GptKnobs.of(p)
    if knobs.attention_backend == "local":
        scores = (SCORE_BYTES + (SCORE_DROPOUT_BYTES if dropout else 0.0)) * heads * seq / h * scale
    if recompute == "full":  # the checkpoints of every micro-batch, one layer recomputed
        act = (tokens * layers * CHECKPOINT_INPUT_BYTES * scale
               + micro_batch * seq * (per_block + scores)) * h / tp
    elif recompute == "selective":  # Megatron-core recomputes core attention: the scores
        act = tokens * h * layers * per_block / tp
    else:
        act = tokens * h * layers * (per_block + scores) / tp
    logit_bytes = LOGIT_BYTES_FP32 if fp32 else LOGIT_BYTES
    logits = micro_batch * seq * vocab * logit_bytes / tp if stage == pp - 1 else 0.0
    foreach = 0 if knobs.fused_optimizer else FOREACH_TEMP_BYTES * n // shards
    components = {"weights": weights, "master weights": master, "gradients": grads,
                  "optimizer states": states}
    if foreach > act + logits:
        components["optimizer step temporaries"] = foreach
        phase = "+ the foreach AdamW step's copy of the second moments (4 bytes a parameter)"
    else:
        components.update({"activations": int(act), "logits": int(logits)})
        phase = (f"+ activations {per_block:g}·b·s·h·L/tp x {in_flight} micro-batch(es) in "
                 f"flight (recompute {recompute}) + logits {logit_bytes:g}·b·s·V/tp")
    optimizer = ("16N (fp32 weights, gradients, AdamW)" if fp32 else
                 "2N bf16 weights + 4N fp32 gradient buffer + 12N fp32 masters and AdamW"
                 + (f" over {shards} data-parallel shards" if shards > 1 else ""))
    where = f"stage {stage} of {pp}, " if pp > 1 else ""
    return MemoryEstimate(
        total_bytes=sum(components.values()), components=components,
        formula=f"{where}N={n:,} on this rank (tp {tp}): {optimizer} {phase}")


def estimate(p: dict, *, precision: str, micro_batch: int, micro_batches: int, world: int,
             recompute: str) -> MemoryEstimate:
    """The per-GPU peak: that of the pipeline stage that needs most."""
    layout = layout_of(p, world)
    return max((stage_estimate(p, precision=precision, micro_batch=micro_batch,
                               micro_batches=micro_batches, layout=layout, recompute=recompute,
                               stage=stage) for stage in range(layout.pp)),
               key=lambda e: e.total_bytes)


def memory_plan(params: dict, settings, *, recompute_choices: tuple[str, ...] = RECOMPUTE_ORDER,
                layout_fixed: bool = False, usable_hint: int | None = None) -> MemoryPlan:
    """The config as resolved, then variants that need less memory, fastest first.

    Variants: the distributed optimizer (with dp > 1), a smaller micro batch with
    proportionally more accumulation (the global batch unchanged), and more recompute among
    ``recompute_choices`` (the case's; selective only with local attention, where it drops
    the score matrices: with SDPA it saves next to nothing). ``layout_fixed``: the case's
    name fixes the tensor-parallel degree (the Megatron-LM matrix), so no layout hints.
    """
    precision, world = settings.precision, settings.world_size
    mbs, accum = settings.micro_batch_size, settings.grad_accum_steps
    knobs = GptKnobs.of(params)
    recompute = knobs.recompute
    layout = layout_of(params, world)

    def est(p: dict = params, *, batch: int = mbs, rec: str = recompute) -> MemoryEstimate:
        return estimate(p, precision=precision, micro_batch=batch,
                        micro_batches=accum * (mbs // batch), world=world, recompute=rec)

    local = knobs.attention_backend == "local"
    start = RECOMPUTE_ORDER.index(recompute) if recompute in RECOMPUTE_ORDER else 0
    recomputes = [r for r in RECOMPUTE_ORDER[start:] if r == recompute or (
        r in recompute_choices and (r != "selective" or local))]
    sharded = ([{"sharding_stage": 1}] if layout.dp > 1 and layout.sharding_stage < 1 else [])
    options: list[tuple[float, MemoryCandidate]] = [
        (2.0, MemoryCandidate(estimate=est(), label="as configured"))]
    for extra in [{}, *sharded]:
        p = {**params, **extra}
        for rec in recomputes:
            for batch in (b for b in range(mbs, 0, -1) if mbs % b == 0):
                overrides: dict = dict(extra)
                if rec != recompute:
                    overrides["recompute"] = rec
                if batch != mbs:
                    overrides["micro_batch_size"] = batch
                    overrides["grad_accum_steps"] = accum * (mbs // batch)
                if not overrides:
                    continue
                speed = (RECOMPUTE_SPEED[rec] / RECOMPUTE_SPEED.get(recompute, 1.0)
                         * HALVED_BATCH_SPEED ** math.log2(mbs / batch)
                         * (DISTRIBUTED_OPTIMIZER_SPEED if extra else 1.0))
                label = ", ".join(f"{k}={v}" for k, v in overrides.items())
                options.append((speed, MemoryCandidate(overrides=overrides, label=label,
                                                       estimate=est(p, batch=batch, rec=rec))))
    options.sort(key=lambda item: -item[0])  # stable: the resolved config stays first
    return MemoryPlan(candidates=[c for _, c in options],
                      hints=_tensor_parallel_hints(params, settings, usable_hint)
                      if world == 1 and not layout_fixed and usable_hint is not None else [])


def _tensor_parallel_hints(params: dict, settings, usable: int) -> list[str]:
    """The fewest GPUs of this size that would hold the model tensor parallel (one node's
    worth at most), at the configured micro batch and recompute."""
    heads, vocab = int(params["num_heads"]), int(params["vocab_size"])
    for gpus in (2, 4, 8):
        if heads % gpus or vocab % gpus:
            continue
        p = {**params, "tensor_parallel_degree": gpus, "pipeline_parallel_degree": 1}
        split = estimate(p, precision=settings.precision, micro_batch=settings.micro_batch_size,
                         micro_batches=settings.grad_accum_steps, world=gpus,
                         recompute=GptKnobs.of(params).recompute)
        if split.total_bytes <= usable:
            return [f"--nproc {gpus} --set tensor_parallel_degree={gpus} (tensor parallel on "
                    f"{gpus} GPUs of this size: about {split.total_bytes / GIB:,.0f} GiB each)"]
    return []
