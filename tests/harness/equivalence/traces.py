"""Traces as the training scripts write them, built in memory for the comparison's tests."""

from __future__ import annotations

import numpy as np

from harness.equivalence.trace import Checksum, Trace

SHAPES = {"wte.weight": [64, 16], "blocks.0.fc.weight": [32, 16], "blocks.0.fc.bias": [32],
          "blocks.1.fc.weight": [16, 32], "ln_f.weight": [16]}
LAYERS = ["embeddings", "blocks.0", "blocks.1", "ln_f", "loss"]


def trace(framework: str, *, losses=(4.0, 3.5, 3.0), layer_scale: dict | None = None,
          shapes: dict | None = None, grad_norm: float = 2.0) -> Trace:
    layer_scale = layer_scale or {}
    activations = [Checksum(name=name, shape=[2, 16], mean=0.1 * layer_scale.get(name, 1.0),
                            abs_mean=0.8 * layer_scale.get(name, 1.0), rms=1.0 * layer_scale.get(name, 1.0),
                            probe=0.3 * layer_scale.get(name, 1.0)) for name in LAYERS]
    return Trace(version=1, framework=framework, framework_version="1.0",
                 parameters=shapes or SHAPES, buffers=[], loss_terms=64, activations=activations,
                 losses=list(losses), grad_norm_step1=grad_norm,
                 grad_norms_step1={"blocks.0.fc.weight": grad_norm}, notes=[])


def states(change: float = 0.0, seed: int = 0):
    """(initial, final a, final b): training moved every weight by ~0.01; b's final weights
    differ from a's by ``change`` of that movement."""
    rng = np.random.default_rng(seed)
    initial = {n: rng.standard_normal(s).astype(np.float32) for n, s in SHAPES.items()}
    update = {n: 0.01 * rng.standard_normal(s) for n, s in SHAPES.items()}
    a = {n: (initial[n] + update[n]).astype(np.float32) for n in SHAPES}
    b = {n: (initial[n] + update[n] * (1 + change)).astype(np.float32) for n in SHAPES}
    return initial, a, b
