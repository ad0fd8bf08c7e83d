"""Model FLOPs of BERT pre-training per sequence, from the resolved case parameters.

6 x parameters x tokens for the encoder's matrix products (every token), 6 x the MLM head's
products for the masked positions only (``max_predictions``: the most a sequence has, as the
NGC and PaddleNLP scripts run the head on the gathered masked positions), and 12·L·h·s² for the
attention scores and values (PaLM's 12·L·h·s per token). Embedding lookups, LayerNorm and the
pooler/NSP head (one token) are negligible and left out.
"""

from __future__ import annotations

from typing import Mapping

from harness.models import FlopsEstimate

FORMULA = "bert-6N_enc*s+6N_mlm*p+12Lhs^2"


def bert_flops_per_sequence(params: Mapping[str, object]) -> FlopsEstimate:
    h, layers = int(params["hidden_size"]), int(params["num_layers"])
    seq, ffn = int(params["seq_len"]), int(params["intermediate_size"])
    vocab, predictions = int(params["vocab_size"]), int(params["max_predictions"])
    encoder = layers * (4 * h * h + 2 * h * ffn)  # Q, K, V, output; two FFN matrices
    mlm_head = h * h + h * vocab  # transform dense + decoder (tied to the word embeddings)
    per_sequence = 6.0 * (encoder * seq + mlm_head * predictions) + 12.0 * layers * h * seq * seq
    return FlopsEstimate(per_unit=per_sequence, unit="sequences/s", formula=FORMULA,
                         parameters=encoder + mlm_head, model_parameters=bert_parameter_count(params))


def bert_parameter_count(params: Mapping[str, object]) -> int:
    """Trainable parameters of BERT for pre-training (NVIDIA's / Hugging Face's
    ``BertForPreTraining``, the Paddle plugin's twin): 110,106,428 for BERT-base.

    Embeddings (word, position, token type, LayerNorm); per layer Q, K, V and output projections
    with biases, two LayerNorms and the two FFN matrices with biases; the pooler; the MLM
    transform (dense, LayerNorm) and decoder bias (its weight is the word embedding, counted
    once); the NSP classifier.
    """
    h, layers = int(params["hidden_size"]), int(params["num_layers"])
    ffn, vocab = int(params["intermediate_size"]), int(params["vocab_size"])
    positions, types = int(params["max_position_embeddings"]), int(params["type_vocab_size"])
    embeddings = (vocab + positions + types) * h + 2 * h
    per_layer = 4 * (h * h + h) + 2 * h * ffn + ffn + h + 4 * h
    pooler = h * h + h
    heads = (h * h + h + 2 * h + vocab) + (2 * h + 2)
    return embeddings + layers * per_layer + pooler + heads
