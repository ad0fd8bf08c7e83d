"""The PyTorch plugin's environment records torch's build tag."""

from __future__ import annotations

import pytest


def test_torch_build_tag_matches_the_installed_torch():
    torch = pytest.importorskip("torch")
    from harness_pytorch.plugin import torch_build_tag

    local = torch.__version__.split("+", 1)[1] if "+" in torch.__version__ else None
    assert torch_build_tag() == local
