"""Megatron-core's side of `harness equivalence` on the CPU: the canonical GPT state mapped
into the training script's GPTModel computes what the PyTorch plugin's GPT computes (the
training runs are GPU-only; the model and its forward pass run here where megatron-core is
installed)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR

PLUGINS = Path(__file__).resolve().parents[3] / "plugins"
sys.path.insert(0, str(PLUGINS / "harness_megatron" / "scripts"))
from megatron_equivalence import megatron_name, to_canonical, to_megatron  # noqa: E402

HEADS = 4


def _state(rng, layers=2, h=64, vocab=128, seq=32):
    shapes = {"wte.weight": (vocab, h), "wpe.weight": (seq, h), "ln_f.weight": (h,), "ln_f.bias": (h,)}
    for i in range(layers):
        b = f"blocks.{i}."
        shapes.update({b + "ln1.weight": (h,), b + "ln1.bias": (h,), b + "attn.qkv.weight": (3 * h, h),
                       b + "attn.qkv.bias": (3 * h,), b + "attn.proj.weight": (h, h),
                       b + "attn.proj.bias": (h,), b + "ln2.weight": (h,), b + "ln2.bias": (h,),
                       b + "mlp.fc.weight": (4 * h, h), b + "mlp.fc.bias": (4 * h,),
                       b + "mlp.proj.weight": (h, 4 * h), b + "mlp.proj.bias": (h,)})
    return {n: (0.05 * rng.standard_normal(s) + (1.0 if "ln" in n and n.endswith("weight") else 0.0))
            .astype(np.float32) for n, s in shapes.items()}


def test_names_and_the_per_head_qkv_layout_round_trip():
    state = _state(np.random.default_rng(0))
    mapped = to_megatron(state, HEADS)
    assert megatron_name("blocks.1.attn.qkv.weight") == "decoder.layers.1.self_attention.linear_qkv.weight"
    assert "embedding.word_embeddings.weight" in mapped and "decoder.final_layernorm.bias" in mapped
    back = to_canonical({**mapped, "output_layer.weight": mapped["embedding.word_embeddings.weight"]}, HEADS)
    assert set(back) == set(state) and all((back[n] == state[n]).all() for n in state)
    # Megatron-core reads a row group per head: [q, k, v] of head 0 first.
    x = np.random.default_rng(1).standard_normal(64).astype(np.float32)
    canonical = state["blocks.0.attn.qkv.weight"] @ x
    q, k, v = canonical.reshape(3, HEADS, 16)
    per_head = (mapped["decoder.layers.0.self_attention.linear_qkv.weight"] @ x).reshape(HEADS, 3, 16)
    assert np.allclose(per_head[:, 0], q) and np.allclose(per_head[:, 1], k) and np.allclose(per_head[:, 2], v)
    with pytest.raises(KeyError, match="no Megatron-core parameter"):
        megatron_name("blocks.0.attn.rotary.weight")


def test_megatron_core_gpt_computes_what_the_pytorch_gpt_computes(monkeypatch):
    pytest.importorskip("megatron.core", reason="megatron-core is an optional extra")
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    monkeypatch.syspath_prepend(str(SHARED_SCRIPTS_DIR))
    monkeypatch.syspath_prepend(str(PLUGINS / "harness_pytorch" / "scripts"))
    monkeypatch.syspath_prepend(str(PLUGINS / "harness_megatron" / "scripts"))
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(29100 + os.getpid() % 1000))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        from megatron.core import parallel_state

        import train_megatron_gpt as script
        from gpt_model import GPT

        parallel_state.initialize_model_parallel(1, 1)
        p = {"num_layers": 2, "hidden_size": 64, "num_heads": HEADS, "ffn_multiplier": 4,
             "dropout": 0.0, "init_std": 0.02, "vocab_size": 128, "seq_len": 32,
             "recompute": "none", "attention_backend": "auto"}
        megatron, _ = script.build_model(p, 1, 1, "fp32", False, device=torch.device("cpu"))
        reference = GPT(vocab_size=128, seq_len=32, num_layers=2, hidden_size=64, num_heads=HEADS)
        state = _state(np.random.default_rng(2))
        with torch.no_grad():
            for name, param in reference.named_parameters():
                param.copy_(torch.from_numpy(state[name]))
            named = dict(megatron.named_parameters())
            for name, array in to_megatron(state, HEADS).items():
                named[name].copy_(torch.from_numpy(array))
        # Every parameter of Megatron-core's model is a canonical one (the output layer shared).
        assert set(named) - set(to_megatron(state, HEADS)) <= {"output_layer.weight"}
        megatron.eval()
        reference.eval()
        tokens = torch.randint(0, 128, (2, 33), generator=torch.Generator().manual_seed(3))
        inputs, targets = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
        with torch.no_grad():
            expected = float(reference(inputs, targets))
            positions = torch.arange(32).unsqueeze(0).expand(2, -1)
            got = float(megatron(inputs, positions, None, labels=targets).mean())
        # Equal to fp32 rounding: the same LayerNorm, GeLU (tanh), attention scale and tied head.
        print(f"megatron-core {got!r} pytorch {expected!r} relative {abs(got - expected) / expected:.2e}")
        assert abs(got - expected) / expected < 1e-6, (got, expected)
        parallel_state.destroy_model_parallel()
    finally:
        dist.destroy_process_group()
        sys.modules.pop("train_megatron_gpt", None)
