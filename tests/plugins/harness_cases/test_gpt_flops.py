"""GPT model FLOPs: the parameter formula against a real model, and 6N + 12·L·h·s by hand."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from harness_cases.gpt_flops import gpt_flops_per_token, gpt_parameter_count

SCRIPTS = Path(__file__).resolve().parents[3] / "plugins" / "harness_pytorch" / "scripts"


def test_flops_per_token_by_hand():
    # L=2, h=64, V=128, s=32: N = 2(12·64² + 13·64) + (128 + 32)·64 + 2·64 = 110,336
    params = {"num_layers": 2, "hidden_size": 64, "vocab_size": 128, "seq_len": 32}
    estimate = gpt_flops_per_token(params)
    assert estimate.parameters == 110_336
    assert estimate.per_unit == 6 * 110_336 + 12 * 2 * 64 * 32
    assert estimate.unit == "tokens/s" and estimate.formula == "palm-6N+12Lhs"


@pytest.mark.parametrize("layers, hidden, heads, vocab, seq", [(2, 64, 4, 128, 32), (3, 96, 3, 200, 16)])
def test_parameter_formula_matches_the_pytorch_model(layers, hidden, heads, vocab, seq):
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(SCRIPTS))
    try:
        from gpt_model import GPT
    finally:
        sys.path.remove(str(SCRIPTS))
    model = GPT(vocab_size=vocab, seq_len=seq, num_layers=layers, hidden_size=hidden, num_heads=heads)
    assert model.num_parameters() == gpt_parameter_count(
        num_layers=layers, hidden_size=hidden, vocab_size=vocab, seq_len=seq)
    del torch
