"""The GPT cases' run-time knobs and their defaults, written down once.

Standard library only: the training scripts import it in their own environments
(``with_knob_defaults``); on the harness side ``harness_cases.gpt_knobs.GptKnobs`` types the
same knobs for the framework plugins, with these defaults, and the GPT cases' params start
from them.
"""

from __future__ import annotations

GPT_KNOB_DEFAULTS: dict[str, object] = {
    # Activation recomputation: none, selective (attention) or full (every block).
    "recompute": "none",
    "compile": False,
    "fused_optimizer": True,
    # The attention kernel: auto/flash/cudnn/efficient (PyTorch's SDPA backends) or local
    # (Megatron-core's own attention).
    "attention_backend": "auto",
    # "cpu": fp32 master weights and AdamW states in host memory (one device only).
    "offload": "none",
    # "model": fp32 parameters cast by autocast in every micro-batch; "optimizer":
    # compute-dtype parameters and residual stream, fp32 master weights and gradient
    # accumulation kept by the optimizer (Megatron-LM's bf16 layout; the PyTorch plugin runs it
    # on one device, the Megatron-core plugin in bf16/fp16 only).
    "master_weights": "model",
    # true: where the optimizer keeps flat fp32 gradients (master_weights=optimizer or
    # offload=cpu) on CUDA, the block linears' weight gradients are added into them by the
    # matrix product, except in fp8 (torchao's linears): Megatron-LM's gradient accumulation
    # fusion, which the Megatron-core plugin has only where apex's extension is installed. Off
    # by default: vendors turn it on where it measured faster.
    "gradient_accumulation_fusion": False,
    # FlagPerf's sharding stages (0: none; 1-3: optimizer state, gradients, parameters).
    "sharding_stage": 0,
    "sharding_degree": 0,
    "tensor_parallel_degree": 1,
    "pipeline_parallel_degree": 1,
}


def with_knob_defaults(params: dict) -> dict:
    """``params`` with every knob it leaves out at its default."""
    return {**GPT_KNOB_DEFAULTS, **params}
