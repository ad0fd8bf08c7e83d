"""The GPT-3 family (Brown et al. 2020, table 2.1) as benchmark cases."""

from __future__ import annotations

from harness.models import CaseSpec
from harness_cases.gpt_knobs import GPT_CHOICES
from harness_cases.param_ranges import CASE_RANGES
from harness_cases.shared_scripts.gpt_knobs import GPT_KNOB_DEFAULTS

# name: (layers, hidden, heads, learning rate) from the GPT-3 paper. The paper lists 24
# heads for 1.3B and d_model 5140 for 13B, neither of which divides into its own d_head
# of 128; like Megatron-LM and FlagPerf we keep d_head = 128 (16 heads, d_model 5120).
GPT3_SIZES: dict[str, tuple[int, int, int, float]] = {
    "gpt3_125M": (12, 768, 12, 6.0e-4),
    "gpt3_350M": (24, 1024, 16, 3.0e-4),
    "gpt3_1.3B": (24, 2048, 16, 2.0e-4),
    "gpt3_2.7B": (32, 2560, 32, 1.6e-4),
    "gpt3_6.7B": (32, 4096, 32, 1.2e-4),
    "gpt3_13B": (40, 5120, 40, 1.0e-4),
}

# Per-GPU micro batch sizes that fit an 80 GB GPU in bf16 with the default recompute.
_MICRO_BATCH = {"gpt3_125M": 16, "gpt3_350M": 16, "gpt3_1.3B": 8, "gpt3_2.7B": 4,
                "gpt3_6.7B": 2, "gpt3_13B": 1}

GPT_IMMUTABLE = frozenset({"num_layers", "hidden_size", "num_heads", "vocab_size", "seq_len"})
# Run-time knobs only: the measurement window (steps, warm-up, learning rate and schedule,
# dataset, seed: harness.measurement_window) is never the vendor's to choose.
GPT_VENDOR_OVERRIDABLE = frozenset({
    "precision", "micro_batch_size", "grad_accum_steps", "nproc",
    "recompute", "compile", "sharding_stage", "sharding_degree", "tensor_parallel_degree",
    "pipeline_parallel_degree", "fused_optimizer", "attention_backend", "offload",
    "master_weights", "gradient_accumulation_fusion",
})

# A laptop-CPU preset: same code path, tiny dimensions, a handful of steps. Peak rate 2e-3:
# at 3e-3 about one run in ten (the data order changes with every repeat's nonce) had a
# one-step loss spike of up to +1.5 nats between steps 7 and 13, above the first loss; at 2e-3
# none in 60 runs, and the loss still falls by 1.11 to 1.33 nats in 30 steps (docs/health.md).
GPT_SMOKE = {
    "num_layers": 2, "hidden_size": 128, "num_heads": 4, "seq_len": 256, "vocab_size": 2048,
    "micro_batch_size": 8, "max_steps": 30, "skip_steps": 5, "lr_warmup_steps": 3,
    "learning_rate": 2.0e-3, "min_learning_rate": 3.0e-4, "compile": False, "recompute": "none",
    # A 3-step warm-up and a decay over the run: 375M tokens would be 180,000 smoke steps.
    "lr_warmup_tokens": 0, "lr_decay_tokens": 0,
}


def gpt3_case(name: str) -> CaseSpec:
    layers, hidden, heads, lr = GPT3_SIZES[name]
    return CaseSpec(
        name=name,
        headline=True,
        model="gpt",
        description=f"GPT-3 {name.split('_')[1]} pre-training: {layers} layers, hidden {hidden}, "
                    f"{heads} heads, seq 2048, vocab 50304",
        dataset="gpt-npy",
        unit="tokens/s",
        mission_name="语义表示",  # the seeds' task name for GPT (language representation)
        direction_id=1,
        legacy_prefix="nlp",
        settings={
            "precision": "fp32", "micro_batch_size": _MICRO_BATCH[name], "grad_accum_steps": 1,
            "max_steps": 100, "skip_steps": 10,
        },
        params={
            "num_layers": layers, "hidden_size": hidden, "num_heads": heads, "seq_len": 2048,
            "vocab_size": 50304, "ffn_multiplier": 4, "dropout": 0.0,
            # GPT-3's schedule in tokens (Brown et al. 2020, 2.3 and appendix B; FlagPerf's
            # gpt3 configs: warmup_steps 188 at 2M-token batches): linear warm-up over 375M
            # tokens, cosine decay to 10% over 260B. The training scripts turn tokens into steps
            # of the run's own global batch (lr_schedule.schedule_steps), so every layout
            # reaches the same rate after the same tokens; a 100-step run of 131k-token batches
            # stays inside the warm-up (about 3.5% of the peak rate at step 100). The 10-step
            # warm-up this replaces moved every weight by lr/10 in AdamW's first (sign-like)
            # update: the loss jumped from 11.3 to 17 (1.3B) and from 11.7 to 32 (6.7B) at step
            # 2 on every optimizer path (BENCHMARKS.md, loss spikes).
            "learning_rate": lr, "min_learning_rate": lr / 10,
            "lr_warmup_tokens": 375_000_000, "lr_decay_tokens": 260_000_000_000,
            "lr_warmup_steps": 0, "lr_decay_steps": 0,  # used where the tokens are 0 (smoke)
            "weight_decay": 0.1, "adam_beta1": 0.9, "adam_beta2": 0.95,
            # 0.02 as GPT-2, Megatron-LM and FlagPerf's gpt3 configs (initializer_range); the
            # tied output layer's logits then start with standard deviation 0.02 * sqrt(hidden),
            # so the first loss is ln(vocab) + (0.02^2 * hidden) / 2: 11.24 at hidden 2048,
            # 11.65 at 4096, as measured, above ln(50304) = 10.83 before any step.
            "grad_clip": 1.0, "init_std": 0.02,
            # How to train: recompute, kernels, optimizer placement, parallel layout
            # (harness_cases.gpt_knobs types them; their defaults live in one place).
            **GPT_KNOB_DEFAULTS,
            "log_interval": 1,
        },
        smoke=GPT_SMOKE,
        uniform_loss_classes=("vocab_size",),
        immutable=GPT_IMMUTABLE,
        vendor_overridable=GPT_VENDOR_OVERRIDABLE,
        choices=GPT_CHOICES,
        ranges=CASE_RANGES,
    )


def gpt3_cases() -> list[CaseSpec]:
    return [gpt3_case(name) for name in GPT3_SIZES]
