"""Model FLOPs of the GPT decoder, so that MFU is computed from the model, never typed in.

Training FLOPs per token = 6·N + 12·L·h·s (PaLM, appendix B), the formula of
``shared_scripts/model_flops.py`` that the training scripts' log lines use too.
"""

from __future__ import annotations

from typing import Mapping

from harness.models import FlopsEstimate
from harness_cases.shared_scripts.model_flops import gpt_training_flops_per_token

FORMULA = "palm-6N+12Lhs"


def gpt_parameter_count(*, num_layers: int, hidden_size: int, vocab_size: int, seq_len: int,
                        ffn_multiplier: int = 4) -> int:
    """Parameters N of a GPT-2/3 decoder with learned positions and tied input/output embeddings.

    Per layer: QKV (3h² + 3h), output projection (h² + h), MLP (2·m·h² + m·h + h) and two
    LayerNorms (4h); plus token (V·h) and position (s·h) embeddings and the final LayerNorm (2h).
    The PyTorch plugin's GPT and Megatron-core's GPTModel (tied embeddings) have exactly these.
    """
    h, m = hidden_size, ffn_multiplier
    per_layer = (4 + 2 * m) * h * h + (9 + m) * h
    return num_layers * per_layer + vocab_size * h + seq_len * h + 2 * h


def gpt_flops_per_token(params: Mapping[str, object]) -> FlopsEstimate:
    """The PaLM estimate for a case's resolved ``params`` (num_layers, hidden_size, ...)."""
    layers, hidden = int(params["num_layers"]), int(params["hidden_size"])
    seq, vocab = int(params["seq_len"]), int(params["vocab_size"])
    n = gpt_parameter_count(num_layers=layers, hidden_size=hidden, vocab_size=vocab, seq_len=seq,
                            ffn_multiplier=int(params.get("ffn_multiplier", 4)))
    return FlopsEstimate(per_unit=gpt_training_flops_per_token(n, layers, hidden, seq),
                         unit="tokens/s", formula=FORMULA, parameters=n, model_parameters=n)
