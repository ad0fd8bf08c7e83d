"""BERT-base pre-training (MLM + NSP, sequence 128, at most 20 masked predictions).

The NGC PyTorch BERT case of the seeds (phase 1 of pre-training, reported in sequences/s),
reading the NGC HDF5 format.
"""

from __future__ import annotations

from harness.models import CaseSpec
from harness_cases.param_ranges import CASE_RANGES
from harness_cases.shared_scripts.training_knobs import TRAINING_KNOB_CHOICES

BERT_IMMUTABLE = frozenset({
    "num_layers", "hidden_size", "num_heads", "intermediate_size", "vocab_size", "seq_len",
    "max_predictions", "type_vocab_size", "max_position_embeddings",
})
# Run-time knobs only: never the measurement window (harness.measurement_window).
BERT_VENDOR_OVERRIDABLE = frozenset({
    "precision", "micro_batch_size", "grad_accum_steps", "nproc",
    "recompute", "amp_level", "compile", "compile_mode", "grad_allreduce",
    "grad_sync",
})

# Same code path on a laptop CPU: two small layers, the real sequence length and masking.
BERT_SMOKE = {
    "num_layers": 2, "hidden_size": 128, "num_heads": 2, "intermediate_size": 512,
    "vocab_size": 2048, "micro_batch_size": 8, "max_steps": 30, "skip_steps": 5,
    "learning_rate": 1.0e-3, "lr_warmup_steps": 3, "num_samples": 2048,
}


def bert_base_seq128() -> CaseSpec:
    return CaseSpec(
        name="bert_base_seq128",
        headline=True,
        model="bert",
        description="BERT-base pre-training (MLM + NSP): 12 layers, hidden 768, 12 heads, "
                    "seq 128, max 20 predictions, vocab 30522",
        dataset="bert-hdf5",
        unit="sequences/s",
        mission_name="语义表示",  # the seeds' task name for BERT (language representation)
        direction_id=1,
        legacy_prefix="nlp",
        settings={"precision": "fp32", "micro_batch_size": 32, "grad_accum_steps": 1,
                  "max_steps": 200, "skip_steps": 20},
        params={
            "num_layers": 12, "hidden_size": 768, "num_heads": 12, "intermediate_size": 3072,
            "vocab_size": 30522, "type_vocab_size": 2, "max_position_embeddings": 512,
            "seq_len": 128, "max_predictions": 20, "dropout": 0.1, "init_std": 0.02,
            "learning_rate": 1.0e-4, "lr_warmup_steps": 10, "weight_decay": 0.01,
            "adam_beta1": 0.9, "adam_beta2": 0.999, "grad_clip": 1.0, "recompute": False,
            "compile": False,  # PyTorch: torch.compile the model and loss (one graph per shape)
            "amp_level": "auto",  # Paddle AMP: O2 on GPUs, O1 on CPUs (or O1/O2)
            "compile_mode": "default",  # PyTorch: torch.compile's mode; reduce-overhead: CUDA graphs
            "grad_allreduce": "fp32",  # PyTorch DDP: the gradients' wire precision (fp32, fp16, bf16)
            "grad_sync": "ddp",  # PyTorch data parallel: ddp (DDP's buckets), flat (one all-reduce), compiled
            "num_samples": 16384, "log_interval": 1,
        },
        smoke=BERT_SMOKE,
        # No two frameworks draw the same dropout masks: the check compares the computation
        # without them (the rate itself is one parameter both scripts read).
        equivalence_settings={"dropout": 0.0},
        uniform_loss_classes=("vocab_size", 2),  # masked-LM + next-sentence loss
        choices=TRAINING_KNOB_CHOICES,
        immutable=BERT_IMMUTABLE,
        vendor_overridable=BERT_VENDOR_OVERRIDABLE,
        ranges=CASE_RANGES,
    )


def bert_cases() -> list[CaseSpec]:
    return [bert_base_seq128()]
