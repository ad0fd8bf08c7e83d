"""The harness GPT decoder in paddle.nn: the same architecture, parameters and initialisation as
the PyTorch plugin's ``gpt_model.py`` (pre-LayerNorm blocks, learned positions, tied embeddings).

With a tensor-parallel degree > 1 the attention and MLP projections become fleet's
column/row-parallel layers (Megatron-style split) and the embedding a vocab-parallel one.
"""

from __future__ import annotations

import math

import paddle
import paddle.nn.functional as F
from paddle import nn


def _linear(in_f: int, out_f: int, kind: str, tp: int):
    """A dense layer; split over the tensor-parallel group when ``tp > 1``."""
    if tp <= 1:
        return nn.Linear(in_f, out_f)
    from paddle.distributed.fleet import meta_parallel as mp

    if kind == "column":
        return mp.ColumnParallelLinear(in_f, out_f, has_bias=True, gather_output=False)
    return mp.RowParallelLinear(in_f, out_f, has_bias=True, input_is_parallel=True)


class CausalSelfAttention(nn.Layer):
    def __init__(self, hidden: int, heads: int, dropout: float, tp: int):
        super().__init__()
        if hidden % heads or heads % tp:
            raise ValueError(f"hidden {hidden} / heads {heads} / tensor parallel {tp} do not divide")
        self.heads = heads // tp  # heads held by this rank
        self.head_dim = hidden // heads
        self.qkv = _linear(hidden, 3 * hidden, "column", tp)
        self.proj = _linear(hidden, hidden, "row", tp)
        self.dropout = dropout

    def forward(self, x):
        batch, seq = x.shape[0], x.shape[1]
        qkv = self.qkv(x).reshape([batch, seq, 3, self.heads, self.head_dim])
        q, k, v = qkv.unbind(axis=2)  # each [batch, seq, heads, head_dim]
        if x.place.is_gpu_place():
            # Flash attention kernel on GPUs (layout [batch, seq, heads, dim]).
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True,
                                                 dropout_p=self.dropout if self.training else 0.0)
        else:
            q, k, v = (t.transpose([0, 2, 1, 3]) for t in (q, k, v))
            scores = paddle.matmul(q, k, transpose_y=True) / math.sqrt(self.head_dim)
            causal = paddle.triu(paddle.full([seq, seq], float("-inf"), dtype=scores.dtype), diagonal=1)
            probs = F.softmax(scores + causal, axis=-1)
            if self.training and self.dropout:
                probs = F.dropout(probs, self.dropout)
            out = paddle.matmul(probs, v).transpose([0, 2, 1, 3])
        return self.proj(out.reshape([batch, seq, self.heads * self.head_dim]))


class MLP(nn.Layer):
    def __init__(self, hidden: int, ffn_hidden: int, tp: int):
        super().__init__()
        self.fc = _linear(hidden, ffn_hidden, "column", tp)
        self.proj = _linear(ffn_hidden, hidden, "row", tp)

    def forward(self, x):
        return self.proj(F.gelu(self.fc(x), approximate=True))


class Block(nn.Layer):
    def __init__(self, hidden: int, heads: int, ffn_hidden: int, dropout: float, recompute: str, tp: int):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads, dropout, tp)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = MLP(hidden, ffn_hidden, tp)
        self.drop = nn.Dropout(dropout)
        # "selective" recomputes the MLP only: its 4h-wide activations dominate the memory.
        self.recompute_mlp = recompute == "selective"

    def forward(self, x):
        x = x + self.drop(self.attn(self.ln1(x)))
        if self.recompute_mlp and self.training:
            from paddle.distributed.fleet.utils import recompute

            return x + self.drop(recompute(self.mlp, self.ln2(x)))
        return x + self.drop(self.mlp(self.ln2(x)))


class GPT(nn.Layer):
    def __init__(self, *, vocab_size: int, seq_len: int, num_layers: int, hidden_size: int,
                 num_heads: int, ffn_multiplier: int = 4, dropout: float = 0.0,
                 init_std: float = 0.02, recompute: str = "none", tensor_parallel: int = 1):
        super().__init__()
        if recompute not in ("none", "full", "selective"):
            raise ValueError(f"recompute must be none, full or selective, got {recompute!r}")
        self.recompute_full = recompute == "full"
        self.tp = tensor_parallel
        if tensor_parallel > 1:
            from paddle.distributed.fleet import meta_parallel as mp

            self.wte = mp.VocabParallelEmbedding(vocab_size, hidden_size)
        else:
            self.wte = nn.Embedding(vocab_size, hidden_size)
        self.wpe = nn.Embedding(seq_len, hidden_size)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.LayerList([
            Block(hidden_size, num_heads, ffn_multiplier * hidden_size, dropout, recompute, tensor_parallel)
            for _ in range(num_layers)
        ])
        self.ln_f = nn.LayerNorm(hidden_size)
        # The output projection is the (tied) token embedding: no parameter of its own.
        self._init_weights(init_std, num_layers)

    def _init_weights(self, std: float, num_layers: int) -> None:
        for name, param in self.named_parameters():
            if name.endswith("bias"):
                param.set_value(paddle.zeros_like(param))
            elif len(param.shape) == 1:  # LayerNorm weights
                param.set_value(paddle.ones_like(param))
            elif name.endswith("proj.weight"):  # residual projections, GPT-2 scaling
                param.set_value(paddle.normal(0.0, std / math.sqrt(2 * num_layers), param.shape))
            else:
                param.set_value(paddle.normal(0.0, std, param.shape))

    def num_parameters(self) -> int:
        """Parameters of the whole model: a tensor-parallel shard counts for all its ranks."""
        return sum(int(p.numel()) * (self.tp if getattr(p, "is_distributed", False) else 1)
                   for p in self.parameters())

    def forward(self, idx, targets=None):
        positions = paddle.arange(idx.shape[1], dtype="int64")
        x = self.drop(self.wte(idx) + self.wpe(positions))
        for block in self.blocks:
            if self.recompute_full and self.training:
                from paddle.distributed.fleet.utils import recompute

                x = recompute(block, x)
            else:
                x = block(x)
        hidden = self.ln_f(x)
        if self.tp > 1:
            return self._vocab_parallel_head(hidden, targets)
        logits = paddle.matmul(hidden, self.wte.weight, transpose_y=True)
        if targets is None:
            return logits
        vocab = logits.shape[-1]
        return F.cross_entropy(logits.astype("float32").reshape([-1, vocab]), targets.reshape([-1]))

    def _vocab_parallel_head(self, hidden, targets):
        """Tied output layer over this rank's vocabulary slice and a vocab-parallel loss
        (Megatron-style: the full logits are never gathered)."""
        import paddle.distributed.fleet as fleet
        from paddle.distributed.fleet.layers.mpu import mp_ops
        from paddle.distributed.fleet.layers.mpu.mp_layers import ParallelCrossEntropy

        group = fleet.get_hybrid_communicate_group().get_model_parallel_group()
        # Identity forward; all-reduce of the input gradient over the tensor-parallel group.
        shared = mp_ops._c_identity(hidden, group=group)
        logits = paddle.matmul(shared, self.wte.weight, transpose_y=True)  # [b, s, vocab / tp]
        if targets is None:
            return mp_ops._c_concat(logits, group=group)
        loss = ParallelCrossEntropy(mp_group=group)(logits.astype("float32"), targets.unsqueeze(-1))
        return loss.mean()
