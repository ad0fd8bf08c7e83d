"""Megatron-core's GPTModel under the canonical GPT names of ``harness equivalence``
(``equivalence.py`` in harness_cases/shared_scripts; numpy only, so it is tested anywhere).

One process (tensor and pipeline parallel 1), the local layer spec of
``train_megatron_gpt.py``. Every canonical tensor has one Megatron-core parameter of the same
shape; the fused query-key-value projection alone is laid out otherwise: canonical rows are
``[q of every head; k of every head; v of every head]``, Megatron-core's are grouped per head
(``[q, k, v of head 0; q, k, v of head 1; ...]``), so its rows (and bias) are permuted on the
way in and out. The output layer shares the word embedding (``share_embeddings_and_output_weights``).
"""

from __future__ import annotations

import re

import numpy as np

_BLOCK = {"ln1": "input_layernorm", "attn.qkv": "self_attention.linear_qkv",
          "attn.proj": "self_attention.linear_proj", "ln2": "pre_mlp_layernorm",
          "mlp.fc": "mlp.linear_fc1", "mlp.proj": "mlp.linear_fc2"}
_TOP = {"wte.weight": "embedding.word_embeddings.weight",
        "wpe.weight": "embedding.position_embeddings.weight",
        "ln_f.weight": "decoder.final_layernorm.weight", "ln_f.bias": "decoder.final_layernorm.bias"}
_CANONICAL_BLOCK = re.compile(r"blocks\.(\d+)\.(.+)\.(weight|bias)$")


def megatron_name(canonical: str) -> str:
    """The Megatron-core parameter name of a canonical GPT name."""
    if canonical in _TOP:
        return _TOP[canonical]
    match = _CANONICAL_BLOCK.fullmatch(canonical)
    if match is None or match[2] not in _BLOCK:
        raise KeyError(f"no Megatron-core parameter for {canonical!r}")
    return f"decoder.layers.{match[1]}.{_BLOCK[match[2]]}.{match[3]}"


def _qkv_rows(array: np.ndarray, heads: int, to_megatron: bool) -> np.ndarray:
    """Rows ``[3, heads, d]`` (canonical) <-> ``[heads, 3, d]`` (Megatron-core)."""
    rest = array.shape[1:]
    d = array.shape[0] // (3 * heads)
    grouped = array.reshape((3, heads, d, *rest) if to_megatron else (heads, 3, d, *rest))
    return np.ascontiguousarray(np.swapaxes(grouped, 0, 1)).reshape(array.shape)


def to_megatron(state: dict[str, np.ndarray], heads: int) -> dict[str, np.ndarray]:
    """Canonical arrays -> Megatron-core parameter names and layouts."""
    return {megatron_name(name): _qkv_rows(a, heads, True) if ".attn.qkv." in name else a
            for name, a in state.items()}


def to_canonical(named: dict[str, np.ndarray], heads: int) -> dict[str, np.ndarray]:
    """Megatron-core's parameters (name -> array) -> canonical names and layouts; the shared
    output layer is left out."""
    reverse = {}
    for name in named:
        if name == "output_layer.weight":
            continue
        canonical = next((c for c, m in _TOP.items() if m == name), None)
        if canonical is None:
            match = re.fullmatch(r"decoder\.layers\.(\d+)\.(.+)\.(weight|bias)", name)
            part = next((c for c, m in _BLOCK.items() if match and m == match[2]), None)
            if part is None:
                raise KeyError(f"no canonical GPT name for Megatron-core's {name!r}")
            canonical = f"blocks.{match[1]}.{part}.{match[3]}"
        reverse[name] = canonical
    return {canonical: _qkv_rows(named[name], heads, False) if ".attn.qkv." in canonical else named[name]
            for name, canonical in reverse.items()}
