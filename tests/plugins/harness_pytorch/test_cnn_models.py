"""The PyTorch plugin's CNNs: the initialisation the Paddle and MXNet networks copy."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

SCRIPTS_DIR = Path(__file__).resolve().parents[3] / "plugins" / "harness_pytorch" / "scripts"
if str(SCRIPTS_DIR) not in sys.path:
    sys.path.insert(0, str(SCRIPTS_DIR))

from cnn_models import Bottleneck, build_model  # noqa: E402


def classifier_input_norm(model) -> float:
    """Mean squared norm per image of what the classifier reads, on one random batch."""
    seen = []
    model.fc.register_forward_hook(lambda module, inputs, output: seen.append(inputs[0]))
    model.train()
    with torch.no_grad():
        model(torch.randn(16, 3, 32, 32))
    return float(seen[0].pow(2).sum(1).mean())


def test_resnet50_starts_each_residual_branch_at_zero():
    """Goyal et al.'s zero gamma: each bottleneck's last batch norm starts at scale 0, every
    other at 1, so the classifier's input starts small. With every scale 1 it starts at about
    4,900 per image, and the smoke runs' loss climbed from 2.6 to as much as 4.0 within ten
    steps (docs/health.md)."""
    torch.manual_seed(0)
    model = build_model("resnet50", 10)
    blocks = [m for m in model.modules() if isinstance(m, Bottleneck)]
    last = {id(block.body[-1][1]) for block in blocks}
    norms = [m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    assert len(blocks) == 16 and len(norms) == 53
    for norm in norms:
        assert torch.all(norm.weight == (0.0 if id(norm) in last else 1.0))
    assert classifier_input_norm(model) < 1_500
    for norm in norms:  # the same network with every scale 1
        torch.nn.init.ones_(norm.weight)
    assert classifier_input_norm(model) > 3_000
