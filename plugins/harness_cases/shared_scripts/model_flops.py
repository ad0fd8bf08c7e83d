"""Training FLOPs of the cases' models: the one formula per model that harness's MFU
(``harness_cases.gpt_flops``, ``harness_cases.bert_flops``) and the training scripts' own log
lines (TFLOP/s/GPU, FLOPs per token or sequence) use. Standard library only: it is imported
inside every framework's interpreter.

GPT: 6·N + 12·L·h·s per token (Chowdhery et al. 2022, PaLM, appendix B): 6·N for the forward
and backward matrix products of every parameter, 12·L·h·s for the attention score and value
products, which no parameter accounts for. Recomputed activations are not counted: MFU
measures useful work, not the work a memory-saving trick adds.

BERT: 6 x the encoder's matrix weights x every token, 6 x the MLM head's for the masked
positions only (``max_predictions``: the most a sequence has, as the NGC and PaddleNLP scripts
run the head on the gathered masked positions), and 12·L·h·s² for the attention scores and
values. Embedding lookups, LayerNorm and the pooler/NSP head (one token) are left out.
"""

from __future__ import annotations


def gpt_training_flops_per_token(parameters: int, num_layers: int, hidden_size: int,
                                 seq_len: int) -> float:
    """6·N + 12·L·h·s for a GPT decoder of ``parameters`` (N, tied embeddings once)."""
    return 6.0 * parameters + 12.0 * num_layers * hidden_size * seq_len


def bert_matmul_weights(num_layers: int, hidden_size: int, intermediate_size: int,
                        vocab_size: int) -> tuple[int, int]:
    """(encoder, MLM head) weights of BERT's matrix products: Q, K, V, output and the two FFN
    matrices per layer; the head's transform and its decoder (tied to the word embeddings)."""
    h = hidden_size
    return num_layers * (4 * h * h + 2 * h * intermediate_size), h * h + h * vocab_size


def bert_training_flops_per_sequence(num_layers: int, hidden_size: int, intermediate_size: int,
                                     vocab_size: int, seq_len: int, max_predictions: int) -> float:
    """6·(encoder·s + MLM head·p) + 12·L·h·s² for one sequence."""
    encoder, mlm_head = bert_matmul_weights(num_layers, hidden_size, intermediate_size, vocab_size)
    return (6.0 * (encoder * seq_len + mlm_head * max_predictions)
            + 12.0 * num_layers * hidden_size * seq_len * seq_len)
