"""Valid ranges of the numeric parameters the built-in cases share (CaseSpec.ranges); any
other numeric parameter must be finite and at least 0 (the core's default)."""

from __future__ import annotations

#: Probabilities and moment coefficients: 0 to 1.
FRACTIONS = {"dropout": (0, 1), "adam_beta1": (0, 1), "adam_beta2": (0, 1), "momentum": (0, 1)}
#: Counts that must be at least one.
AT_LEAST_ONE = {key: (1, None) for key in (
    "num_layers", "hidden_size", "num_heads", "seq_len", "vocab_size", "ffn_multiplier",
    "intermediate_size", "max_position_embeddings", "type_vocab_size", "max_predictions",
    "image_size", "num_classes", "num_samples", "log_interval")}
#: Not bounded here: a framework plugin refuses a degree its launch cannot build, with its own
#: reason (as GptKnobs leaves them).
PLUGIN_CHECKED = {"tensor_parallel_degree": (None, None), "pipeline_parallel_degree": (None, None)}
CASE_RANGES: dict[str, tuple[float | None, float | None]] = {**FRACTIONS, **AT_LEAST_ONE,
                                                              **PLUGIN_CHECKED}

