"""Model FLOPs of BERT pre-training per sequence, from the resolved case parameters.

The formula (encoder matrix products for every token, the MLM head's for the masked positions,
attention scores and values) is ``shared_scripts/model_flops.py``'s, which the training
scripts' log lines use too.
"""

from __future__ import annotations

from typing import Mapping

from harness.models import FlopsEstimate
from harness_cases.shared_scripts.model_flops import (bert_matmul_weights,
                                                      bert_training_flops_per_sequence)

FORMULA = "bert-6N_enc*s+6N_mlm*p+12Lhs^2"


def bert_flops_per_sequence(params: Mapping[str, object]) -> FlopsEstimate:
    dims = {key: int(params[key]) for key in
            ("num_layers", "hidden_size", "intermediate_size", "vocab_size")}
    encoder, mlm_head = bert_matmul_weights(**dims)
    per_sequence = bert_training_flops_per_sequence(
        **dims, seq_len=int(params["seq_len"]), max_predictions=int(params["max_predictions"]))
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
