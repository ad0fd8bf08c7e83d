"""BERT for pre-training (masked LM + next sentence) in paddle.nn.

Laid out like Hugging Face's ``BertForPreTraining`` (which the PyTorch plugin trains), so
both frameworks have the same parameters: embeddings (word, position, token type,
LayerNorm), post-LayerNorm encoder layers, a tanh pooler, the MLM head (dense, GELU,
LayerNorm, decoder tied to the word embeddings plus a bias) and the NSP classifier.
"""

from __future__ import annotations

import math

import paddle
import paddle.nn.functional as F
from paddle import nn


def CANONICAL_NAMES(num_layers: int) -> dict[str, str]:  # noqa: N802 (a table)
    """This model's parameter names -> the canonical BERT names of ``harness equivalence``
    (Hugging Face ``BertForPreTraining``'s, which the PyTorch plugin trains)."""
    names = {
        "embeddings.word.weight": "bert.embeddings.word_embeddings.weight",
        "embeddings.position.weight": "bert.embeddings.position_embeddings.weight",
        "embeddings.token_type.weight": "bert.embeddings.token_type_embeddings.weight",
        "pooler.weight": "bert.pooler.dense.weight", "pooler.bias": "bert.pooler.dense.bias",
        "decoder_bias": "cls.predictions.bias",
        "nsp.weight": "cls.seq_relationship.weight", "nsp.bias": "cls.seq_relationship.bias",
    }
    pairs = {"embeddings.norm": "bert.embeddings.LayerNorm",
             "transform": "cls.predictions.transform.dense",
             "transform_norm": "cls.predictions.transform.LayerNorm"}
    for i in range(num_layers):
        ours, theirs = f"layers.{i}", f"bert.encoder.layer.{i}"
        pairs.update({f"{ours}.query": f"{theirs}.attention.self.query",
                      f"{ours}.key": f"{theirs}.attention.self.key",
                      f"{ours}.value": f"{theirs}.attention.self.value",
                      f"{ours}.attn_out": f"{theirs}.attention.output.dense",
                      f"{ours}.attn_norm": f"{theirs}.attention.output.LayerNorm",
                      f"{ours}.intermediate": f"{theirs}.intermediate.dense",
                      f"{ours}.output": f"{theirs}.output.dense",
                      f"{ours}.out_norm": f"{theirs}.output.LayerNorm"})
    for ours, theirs in pairs.items():
        names[f"{ours}.weight"], names[f"{ours}.bias"] = f"{theirs}.weight", f"{theirs}.bias"
    return names


class Embeddings(nn.Layer):
    def __init__(self, c: dict):
        super().__init__()
        h = c["hidden_size"]
        self.word = nn.Embedding(c["vocab_size"], h)
        self.position = nn.Embedding(c["max_position_embeddings"], h)
        self.token_type = nn.Embedding(c["type_vocab_size"], h)
        self.norm = nn.LayerNorm(h, epsilon=1e-12)
        self.drop = nn.Dropout(c["dropout"])

    def forward(self, input_ids, segment_ids):
        positions = paddle.arange(input_ids.shape[1], dtype="int64").unsqueeze(0)
        x = self.word(input_ids) + self.position(positions) + self.token_type(segment_ids)
        return self.drop(self.norm(x))


class EncoderLayer(nn.Layer):
    def __init__(self, c: dict):
        super().__init__()
        h, self.heads = c["hidden_size"], c["num_heads"]
        self.head_dim = h // self.heads
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.attn_out = nn.Linear(h, h)
        self.attn_norm = nn.LayerNorm(h, epsilon=1e-12)
        self.intermediate = nn.Linear(h, c["intermediate_size"])
        self.output = nn.Linear(c["intermediate_size"], h)
        self.out_norm = nn.LayerNorm(h, epsilon=1e-12)
        self.drop = nn.Dropout(c["dropout"])
        self.attn_drop = nn.Dropout(c["dropout"])

    def _split(self, x):
        b, s = x.shape[0], x.shape[1]
        return x.reshape([b, s, self.heads, self.head_dim]).transpose([0, 2, 1, 3])

    def forward(self, x, additive_mask):
        q, k, v = self._split(self.query(x)), self._split(self.key(x)), self._split(self.value(x))
        scores = paddle.matmul(q, k, transpose_y=True) / math.sqrt(self.head_dim) + additive_mask
        probs = self.attn_drop(F.softmax(scores, axis=-1))
        context = paddle.matmul(probs, v).transpose([0, 2, 1, 3]).reshape(x.shape)
        x = self.attn_norm(x + self.drop(self.attn_out(context)))
        return self.out_norm(x + self.drop(self.output(F.gelu(self.intermediate(x)))))


class BertForPreTraining(nn.Layer):
    def __init__(self, c: dict, recompute: bool = False):
        super().__init__()
        h = c["hidden_size"]
        self.recompute = recompute
        self.embeddings = Embeddings(c)
        self.layers = nn.LayerList([EncoderLayer(c) for _ in range(c["num_layers"])])
        self.pooler = nn.Linear(h, h)
        self.transform = nn.Linear(h, h)
        self.transform_norm = nn.LayerNorm(h, epsilon=1e-12)
        self.decoder_bias = self.create_parameter([c["vocab_size"]], is_bias=True)
        self.nsp = nn.Linear(h, 2)
        self._init_weights(c["init_std"])

    def _init_weights(self, std: float) -> None:
        for name, param in self.named_parameters():
            if "norm" in name:
                param.set_value(paddle.ones_like(param) if name.endswith("weight") else paddle.zeros_like(param))
            elif name.endswith("bias") or name == "decoder_bias":
                param.set_value(paddle.zeros_like(param))
            else:
                param.set_value(paddle.normal(0.0, std, param.shape))
        # Hugging Face's embedding zeroes the padding token's row (pad_token_id 0) at init.
        word = self.embeddings.word.weight
        word.set_value(paddle.concat([paddle.zeros_like(word[:1]), word[1:]]))

    def num_parameters(self) -> int:
        return sum(int(p.numel()) for p in self.parameters())

    def forward(self, input_ids, segment_ids, input_mask, mlm_labels, nsp_labels):
        additive = ((1.0 - input_mask.astype("float32")) * -10000.0).unsqueeze([1, 2])
        x = self.embeddings(input_ids, segment_ids)
        for layer in self.layers:
            if self.recompute and self.training:
                from paddle.distributed.fleet.utils import recompute

                x = recompute(layer, x, additive)
            else:
                x = layer(x, additive)
        pooled = paddle.tanh(self.pooler(x[:, 0]))
        # Only the masked positions go through the MLM head (as NVIDIA's BERT does).
        flat_labels = mlm_labels.reshape([-1])
        picked = paddle.nonzero(flat_labels != -1).reshape([-1])
        hidden = paddle.gather(x.reshape([-1, x.shape[-1]]), picked)
        hidden = self.transform_norm(F.gelu(self.transform(hidden)))
        logits = paddle.matmul(hidden, self.embeddings.word.weight, transpose_y=True) + self.decoder_bias
        mlm = F.cross_entropy(logits.astype("float32"), paddle.gather(flat_labels, picked))
        nsp = F.cross_entropy(self.nsp(pooled).astype("float32"), nsp_labels.reshape([-1]))
        return mlm + nsp
