"""The training script's Megatron-core model on the CPU (runs only where megatron-core is installed).

Builds the script's layer spec (SDPA core attention, sequence-parallel-aware LayerNorm) into a
tiny GPTModel, checks its parameter count against the FLOPs formula's N and runs a forward pass.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest.importorskip("megatron.core", reason="megatron-core is an optional extra")
torch = pytest.importorskip("torch")

SCRIPTS = Path(__file__).resolve().parents[3] / "plugins" / "harness_megatron" / "scripts"


def test_script_spec_builds_a_gpt_with_the_formulas_parameter_count(monkeypatch):
    import torch.distributed as dist

    from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR

    monkeypatch.syspath_prepend(str(SHARED_SCRIPTS_DIR))
    monkeypatch.syspath_prepend(str(SCRIPTS))
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(29000 + os.getpid() % 1000))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        from megatron.core import parallel_state
        from megatron.core.models.gpt import GPTModel
        from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
        from megatron.core.transformer.transformer_block import (TransformerBlockSubmodules,
                                                                 get_num_layers_to_build)
        from megatron.core.transformer.transformer_config import TransformerConfig

        import train_megatron_gpt as script
        from harness_cases.gpt_flops import gpt_parameter_count

        parallel_state.initialize_model_parallel(1, 1)
        config = TransformerConfig(num_layers=2, hidden_size=64, num_attention_heads=4,
                                   ffn_hidden_size=256, use_cpu_initialization=True,
                                   hidden_dropout=0.0, attention_dropout=0.0)
        layer = get_gpt_layer_local_spec()
        layer.submodules.self_attention.submodules.core_attention = script.sdpa_core_attention_class()
        norm = script.sequence_parallel_layer_norm_class()
        layer.submodules.input_layernorm = norm
        layer.submodules.pre_mlp_layernorm = norm
        spec = TransformerBlockSubmodules(
            layer_specs=[layer] * get_num_layers_to_build(config, pp_rank=0), layer_norm=norm)
        model = GPTModel(config=config, transformer_layer_spec=spec, vocab_size=128,
                         max_sequence_length=32, share_embeddings_and_output_weights=True)
        assert sum(p.numel() for p in model.parameters()) == gpt_parameter_count(
            num_layers=2, hidden_size=64, vocab_size=128, seq_len=32)
        tokens = torch.randint(0, 128, (2, 32))
        positions = torch.arange(32).unsqueeze(0).expand(2, -1)
        loss = model(tokens, positions, None, labels=tokens)
        assert loss.shape == (2, 32) and torch.isfinite(loss).all()
        parallel_state.destroy_model_parallel()
    finally:
        dist.destroy_process_group()
        sys.modules.pop("train_megatron_gpt", None)
