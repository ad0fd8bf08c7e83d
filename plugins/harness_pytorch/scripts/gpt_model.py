"""A GPT decoder (GPT-2/3 architecture): pre-LayerNorm blocks, learned positions, tied embeddings.

Standalone: imports torch only, so it runs in any environment that has torch.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint


class CausalSelfAttention(nn.Module):
    def __init__(self, hidden: int, heads: int, dropout: float):
        super().__init__()
        if hidden % heads:
            raise ValueError(f"hidden size {hidden} is not divisible by {heads} heads")
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, seq, hidden = x.shape
        q, k, v = self.qkv(x).split(hidden, dim=2)
        shape = (batch, seq, self.heads, hidden // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        # Flash / memory-efficient kernels where the device has them.
        out = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, dropout_p=self.dropout if self.training else 0.0
        )
        return self.proj(out.transpose(1, 2).reshape(batch, seq, hidden))


class MLP(nn.Module):
    def __init__(self, hidden: int, ffn_hidden: int):
        super().__init__()
        self.fc = nn.Linear(hidden, ffn_hidden)
        self.proj = nn.Linear(ffn_hidden, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn_hidden: int, dropout: float, recompute: str):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden)
        self.attn = CausalSelfAttention(hidden, heads, dropout)
        self.ln2 = nn.LayerNorm(hidden)
        self.mlp = MLP(hidden, ffn_hidden)
        self.drop = nn.Dropout(dropout)
        # "selective" recomputes the MLP only: its 4h-wide activations dominate the memory
        # once attention runs through the flash kernel.
        self.recompute_mlp = recompute == "selective"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.drop(self.attn(self.ln1(x)))
        if self.recompute_mlp and self.training:
            return x + self.drop(checkpoint(self.mlp, self.ln2(x), use_reentrant=False))
        return x + self.drop(self.mlp(self.ln2(x)))


class GPT(nn.Module):
    def __init__(self, *, vocab_size: int, seq_len: int, num_layers: int, hidden_size: int,
                 num_heads: int, ffn_multiplier: int = 4, dropout: float = 0.0,
                 init_std: float = 0.02, recompute: str = "none"):
        super().__init__()
        if recompute not in ("none", "full", "selective"):
            raise ValueError(f"recompute must be none, full or selective, got {recompute!r}")
        self.recompute_full = recompute == "full"
        self.wte = nn.Embedding(vocab_size, hidden_size)
        self.wpe = nn.Embedding(seq_len, hidden_size)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            Block(hidden_size, num_heads, ffn_multiplier * hidden_size, dropout, recompute)
            for _ in range(num_layers)
        )
        self.ln_f = nn.LayerNorm(hidden_size)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied input/output embeddings
        # The dtype of the residual stream when the weights themselves are low precision
        # (host-offloaded optimizer): fp32, as the embeddings of an fp32 model give it.
        self.residual_dtype: torch.dtype | None = None
        self._init_weights(init_std, num_layers)

    def _init_weights(self, std: float, num_layers: int) -> None:
        for name, param in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(param)
            elif param.dim() == 1:  # LayerNorm weights
                nn.init.ones_(param)
            elif name.endswith("proj.weight"):  # residual projections, GPT-2 scaling
                nn.init.normal_(param, 0.0, std / math.sqrt(2 * num_layers))
            else:
                nn.init.normal_(param, 0.0, std)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())  # tied weights counted once

    def compile_layers(self) -> None:
        """``torch.compile`` each block and the output head with its loss, not the whole model.

        The blocks are identical, so one compiled graph serves all of them (parameters are
        graph inputs): compilation takes seconds per distinct graph instead of a full unroll
        of every layer, and it composes with DDP, FSDP2 and activation checkpointing.
        """
        # Wrapped (not compiled in place) so that hooks DDP/FSDP2 add later stay outside the
        # compiled region, as torchtitan does.
        for index, block in enumerate(self.blocks):
            self.blocks[index] = torch.compile(block)
        self._head_loss = torch.compile(self._head_loss)

    def _head_loss(self, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = self.lm_head(self.ln_f(x))
        # The loss in fp32 whatever the autocast dtype: bf16 log-softmax over 50k classes loses digits.
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        positions = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(positions)
        if self.residual_dtype is not None:
            x = x.to(self.residual_dtype)
        x = self.drop(x)
        for block in self.blocks:
            if self.recompute_full and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        if targets is None:
            return self.lm_head(self.ln_f(x))
        return self._head_loss(x, targets)
