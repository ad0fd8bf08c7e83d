"""``harness equivalence`` training of Megatron-core's GPTModel on the CPU (one process).

The GPU training of ``train_megatron_gpt.py`` wraps the model in Megatron-core's
``DistributedDataParallel`` and builds ``get_megatron_optimizer``; in megatron-core 0.16 both
allocate on CUDA whatever the model's device (the gradient buffers, the fp32 optimizer's loss
scale, the grad-norm accumulators), so an equivalence run on the CPU trains the same
``GPTModel`` (``build_model``, loaded from the canonical state) with the update those wrappers
perform for fp32 on one process, restated here:

- the optimizer is Megatron-core's torch fallback, ``torch.optim.AdamW`` (no Transformer
  Engine or apex), over Megatron-core's own parameter groups (``_get_param_groups``: biases
  and 1-D parameters get ``wd_mult`` 0), each group's weight decay ``weight_decay * wd_mult``
  as Megatron-core's ``OptimizerParamScheduler`` sets it;
- the gradients are clipped as ``MegatronOptimizer.clip_grad_norm`` does without apex: the
  norm of the per-tensor norms (shared and tensor-parallel duplicates left out), scaled by
  ``clip / (norm + 1e-6)`` when that is below 1.

The trace says so in its notes: this is not Megatron-core's distributed optimizer.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from equivalence import Equivalence, host_array
from megatron_equivalence import to_canonical, to_megatron

OPTIMIZER_NOTE = ("optimizer: torch AdamW with Megatron-core's parameter groups (weight decay x "
                  "wd_mult: none on biases and 1-D parameters) and Megatron-core's clipping "
                  "arithmetic, restated for the CPU; not Megatron-core's DistributedDataParallel "
                  "or optimizer wrappers, which allocate on CUDA")


def _host(tensor: torch.Tensor) -> np.ndarray:
    return host_array(tensor.detach().cpu().numpy())


def canonical_state(model: torch.nn.Module, heads: int) -> dict[str, np.ndarray]:
    return to_canonical({name: _host(p) for name, p in model.named_parameters()}, heads)


def canonical_grads(model: torch.nn.Module, heads: int) -> dict[str, np.ndarray]:
    return to_canonical({name: _host(p.grad) for name, p in model.named_parameters()
                         if p.grad is not None}, heads)


def load_canonical(model: torch.nn.Module, state: dict[str, np.ndarray], heads: int) -> None:
    named = dict(model.named_parameters())
    with torch.no_grad():
        for name, array in to_megatron(state, heads).items():
            named[name].copy_(torch.from_numpy(np.ascontiguousarray(array)).to(named[name].dtype))


def megatron_param_groups(model: torch.nn.Module, p: dict) -> list[dict]:
    """Megatron-core's parameter groups for ``model``, each with its ``weight_decay``
    (``p["weight_decay"] * wd_mult``)."""
    from megatron.core.optimizer import OptimizerConfig, _get_param_groups

    config = OptimizerConfig(optimizer="adam", lr=p["learning_rate"], min_lr=p["min_learning_rate"],
                             weight_decay=p["weight_decay"], adam_beta1=p["adam_beta1"],
                             adam_beta2=p["adam_beta2"], adam_eps=1e-8, clip_grad=p["grad_clip"])
    groups = _get_param_groups([model], config, None)
    for group in groups:
        group["weight_decay"] = p["weight_decay"] * group["wd_mult"]
    return groups


def build_optimizer(model: torch.nn.Module, p: dict) -> torch.optim.AdamW:
    """Megatron-core's fallback optimizer (``torch.optim.AdamW``, foreach as torch picks on
    the CPU) over its parameter groups."""
    return torch.optim.AdamW(megatron_param_groups(model, p), lr=p["learning_rate"],
                             weight_decay=p["weight_decay"], betas=(p["adam_beta1"], p["adam_beta2"]),
                             eps=1e-8)


def clip_grad_norm(parameters: list[torch.nn.Parameter], max_norm: float) -> float:
    """``MegatronOptimizer.clip_grad_norm`` on one process without apex (megatron-core 0.16:
    ``get_grad_norm_fp32`` over ``local_multi_tensor_l2_norm``, then
    ``clip_grad_by_total_norm_fp32``): returns the norm before clipping."""
    from megatron.core.tensor_parallel import param_is_not_tensor_parallel_duplicate
    from megatron.core.transformer.module import param_is_not_shared

    grads = [q.grad for q in parameters if q.grad is not None and param_is_not_shared(q)
             and param_is_not_tensor_parallel_duplicate(q)]
    if not grads:
        return 0.0
    per_tensor = torch.tensor([torch.norm(g) for g in grads])
    norm = float(torch.tensor([float(torch.norm(per_tensor))]) ** 2.0) ** 0.5
    coefficient = max_norm / (norm + 1.0e-6)
    if coefficient < 1.0:
        for q in parameters:
            if q.grad is not None:
                q.grad.copy_(q.grad * coefficient)
    return norm


def record_first_batch(eq: Equivalence, model, forward) -> None:
    """Each layer's output of the first batch (Megatron-core's are ``[seq, batch, hidden]``:
    transposed to the canonical ``[batch, seq, hidden]``), then the loss."""
    outputs = eq.first_outputs()

    def hook_for(name):
        def hook(_module, _inputs, output):
            out = output[0] if isinstance(output, (tuple, list)) else output
            outputs.add(name, lambda: _host(out.transpose(0, 1)))
        return hook

    layers = [("embeddings", model.embedding),
              *((f"blocks.{i}", layer) for i, layer in enumerate(model.decoder.layers)),
              ("ln_f", model.decoder.final_layernorm)]
    handles = [module.register_forward_hook(hook_for(name)) for name, module in layers]
    try:
        with torch.no_grad():
            loss = forward()
    finally:
        for handle in handles:
            handle.remove()
    outputs.record(_host(loss))


def train(eq: Equivalence, cfg: dict, p: dict, data_prefix: str, flops_per_token: float,
          build_model, log) -> int:
    """Train ``cfg``'s GPT for ``max_steps`` on the neutral sample order and write the trace;
    one process, fp32, on the CPU (``build_model``: the training script's)."""
    import torch.distributed as dist
    from megatron.core import parallel_state

    from data_nonce import data_order_seed
    from gpt_dataset import GPTWindowDataset
    from lr_schedule import lr_at, schedule_steps
    from readback import print_readback

    s = cfg["settings"]
    if s["precision"] != "fp32" or eq.float64:
        log(f"error: Megatron-core's CPU equivalence run trains in fp32; got precision "
            f"{s['precision']}, check arithmetic {eq.precision}")
        return 2
    dist.init_process_group("gloo", rank=0, world_size=1)
    parallel_state.initialize_model_parallel(tensor_model_parallel_size=1,
                                             pipeline_model_parallel_size=1)
    torch.manual_seed(s["seed"])
    torch.use_deterministic_algorithms(True, warn_only=True)
    device = torch.device("cpu")
    model, config = build_model(p, 1, 1, "fp32", False, device=device)
    heads, seq = config.num_attention_heads, p["seq_len"]
    mbs, accum = s["micro_batch_size"], s["grad_accum_steps"]
    loaded = eq.start(canonical_state(model, heads), loss_terms=mbs * seq)
    if loaded is not None:
        load_canonical(model, loaded, heads)
    eq.note(OPTIMIZER_NOTE)
    n_params = sum(t.numel() for t in model.parameters())
    optimizer = build_optimizer(model, p)
    parameters = [q for group in optimizer.param_groups for q in group["params"]]
    max_steps = s["max_steps"]
    print_readback(
        model="gpt", parameters=n_params, num_layers=config.num_layers,
        hidden_size=config.hidden_size, num_heads=heads, seq_len=seq, vocab_size=p["vocab_size"],
        micro_batch_size=mbs, grad_accum_steps=accum, global_batch_size=mbs * accum,
        world_size=1, precision="fp32", learning_rate=p["learning_rate"],
        min_learning_rate=p["min_learning_rate"], lr_warmup_steps=p["lr_warmup_steps"],
        lr_decay_steps=p["lr_decay_steps"], lr_warmup_tokens=p.get("lr_warmup_tokens"),
        lr_decay_tokens=p.get("lr_decay_tokens"), tensor_parallel_degree=1,
        pipeline_parallel_degree=1, max_steps=max_steps, seed=s["seed"], device_type="cpu")
    log(f"> Megatron-core GPT: {p['num_layers']} layers, hidden {p['hidden_size']}, {heads} heads, "
        f"seq {seq}, vocab {p['vocab_size']}; {n_params:,} parameters")
    log(f"> training: megatron-core equivalence run on 1 x cpu, fp32, micro batch {mbs}, "
        f"micro-batches per step {accum}, torch {torch.__version__}; {OPTIMIZER_NOTE}")

    dataset = GPTWindowDataset(data_prefix, seq, data_order_seed(s["seed"]), p["vocab_size"])
    positions = torch.arange(seq).unsqueeze(0).expand(mbs, -1)

    def batches():
        for indices in eq.batches(len(dataset), mbs, s["seed"]):
            samples = [dataset[int(i)] for i in indices]
            yield torch.stack([x for x, _ in samples]), torch.stack([y for _, y in samples])

    def loss_of(tokens, labels):
        return model(tokens, positions, None, labels=labels).float().mean()

    first_tokens, first_labels = next(batches())
    record_first_batch(eq, model, lambda: loss_of(first_tokens, first_labels))
    data = batches()
    warmup_steps, decay_steps = schedule_steps(p, mbs * accum * seq, max_steps)
    model.train()
    consumed = nan_iters = 0
    for step in range(1, max_steps + 1):
        started = time.perf_counter()
        lr = lr_at(step, p["learning_rate"], warmup_steps, decay_steps, floor=p["min_learning_rate"])
        for group in optimizer.param_groups:
            group["lr"] = lr
        step_loss = torch.zeros(())
        for _ in range(accum):
            tokens, labels = next(data)
            loss = loss_of(tokens, labels) / accum
            loss.backward()
            step_loss += loss.detach()
        if step == 1:
            eq.gradients(canonical_grads(model, heads))
        grad_norm = clip_grad_norm(parameters, p["grad_clip"]) if p["grad_clip"] > 0 else 0.0
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        value = float(step_loss)
        elapsed_ms = 1000.0 * (time.perf_counter() - started)
        eq.step(step, value)
        consumed += mbs * accum
        if not math.isfinite(value):
            nan_iters += 1
        log(f" iteration {step:8d}/{max_steps:8d} | consumed samples: {consumed:12d} | "
            f"elapsed time per iteration (ms): {elapsed_ms:.1f} | throughput per GPU (TFLOP/s/GPU): "
            f"{flops_per_token * mbs * accum * seq / (elapsed_ms / 1000) / 1e12:.1f} | "
            f"learning rate: {lr:.6E} | global batch size: {mbs * accum:5d} | lm loss: {value:.6E} | "
            f"loss scale: 1.0 | grad norm: {grad_norm:.3f} | number of skipped iterations:   0 | "
            f"number of nan iterations: {nan_iters:3d} |")
    eq.finish(canonical_state(model, heads))
    log("> training finished")
    parallel_state.destroy_model_parallel()
    dist.destroy_process_group()
    return 0 if nan_iters == 0 else 1
