"""Megatron-core's side of `harness equivalence` on the CPU: the canonical GPT state mapped
into the training script's GPTModel computes what the PyTorch plugin's GPT computes, and
`harness equivalence --frameworks pytorch,megatron` trains both on the CPU and passes (where
megatron-core is installed)."""

from __future__ import annotations

import json
import os
import subprocess
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


def test_megatron_core_parameter_groups_decay_matrices_only(monkeypatch):
    """Megatron-core's groups (``wd_mult`` 0 on biases and 1-D parameters) with the weight
    decay its scheduler gives them, as the PyTorch plugin decays: matrices only."""
    pytest.importorskip("megatron.core", reason="megatron-core is an optional extra")
    torch = pytest.importorskip("torch")
    import torch.distributed as dist

    monkeypatch.syspath_prepend(str(SHARED_SCRIPTS_DIR))
    from megatron_equivalence_training import megatron_param_groups

    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.LayerNorm(3))
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(29200 + os.getpid() % 1000))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        groups = megatron_param_groups(model, {"learning_rate": 1e-3, "min_learning_rate": 1e-4,
                                               "weight_decay": 0.1, "adam_beta1": 0.9,
                                               "adam_beta2": 0.95, "grad_clip": 1.0})
    finally:
        dist.destroy_process_group()
    decay = {tuple(q.shape) for g in groups if g["weight_decay"] == 0.1 for q in g["params"]}
    none = {tuple(q.shape) for g in groups if g["weight_decay"] == 0.0 for q in g["params"]}
    assert decay == {(3, 4)} and none == {(3,)} and sum(len(g["params"]) for g in groups) == 4


@pytest.mark.parametrize("frameworks", ["pytorch,megatron", "pytorch,megatron,paddle"])
def test_harness_equivalence_trains_megatron_core_on_the_cpu(tmp_path, frameworks):
    """The whole check: PyTorch exports the initial state, Megatron-core's GPTModel (and
    Paddle's GPT) load it and train 3 steps on the CPU; every step's loss, step 1's gradients
    and the final weights agree with PyTorch's within the fp32 tolerances, and the trace says
    which optimizer trained Megatron-core's model."""
    pytest.importorskip("megatron.core", reason="megatron-core is an optional extra")
    from harness.cache import default_cache_dir
    from tests.plugins.test_equivalence_frameworks import require_envs

    require_envs(*frameworks.split(",")[2:])
    env = dict(os.environ, HARNESS_CACHE_DIR=str(default_cache_dir()), PYTHONUNBUFFERED="1")
    env.pop("HARNESS_BLOCK_PLUGINS", None)
    proc = subprocess.run([sys.executable, "-m", "harness", "equivalence", "--json", "--output",
                           str(tmp_path / "results"), "--case", "gpt3_125M", "--frameworks",
                           frameworks, "--steps", "3"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert [run["status"] for run in result["runs"]] == ["success"] * len(frameworks.split(","))
    assert [pair["candidate"] for pair in result["pairs"]] == frameworks.split(",")[1:]
    for pair in result["pairs"]:
        assert pair["problems"] == [] and pair["first_divergence"] is None, pair["problems"]
        assert pair["shape_differences"] == [] and pair["init_differences"] == []
        assert pair["parameter_count"][0] == pair["parameter_count"][1] > 0
        assert [layer["name"] for layer in pair["layers"]] == ["embeddings", "blocks.0",
                                                               "blocks.1", "ln_f", "loss"]
        # Real numbers from two frameworks: within fp32 rounding (measured 1.3e-7 relative
        # at most), far below a real difference (decaying biases and norms too: 4.8e-3 of
        # the update in the final weights, tolerance 7.6e-5).
        assert len(pair["steps"]) == 3 and max(s["relative"] for s in pair["steps"]) < 1e-6
        assert 0 < pair["grad_norm"]["reference"] and pair["grad_norm"]["relative"] < 1e-6
        assert pair["final_change"] < pair["final_tolerance"]
    assert any("torch AdamW with Megatron-core's parameter groups" in note
               for note in result["trace_notes"]["megatron"])
