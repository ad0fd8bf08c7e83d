"""The PyTorch scripts' side of ``harness equivalence``: their models' parameters under the
canonical names (``equivalence.py`` in harness_cases/shared_scripts), and the per-layer
activation checksums of the first batch.

PyTorch's layouts are the canonical ones (``nn.Linear`` weights ``[out, in]``), so the mapping
is a renaming only: ``rename`` maps a model's own names to canonical ones (absent: the same
name). Floating-point buffers (BatchNorm's running statistics) belong to the state too.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from equivalence import Equivalence


def _named_tensors(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    named = dict(model.named_parameters())  # tied weights once, under their first name
    named.update((name, b) for name, b in model.named_buffers() if b.is_floating_point())
    return named


def buffer_names(model: torch.nn.Module, rename: dict[str, str] | None = None) -> list[str]:
    """Canonical names of the state's entries that are not trained (running statistics)."""
    rename = rename or {}
    return [rename.get(name, name) for name, b in model.named_buffers() if b.is_floating_point()]


def state_arrays(model: torch.nn.Module, rename: dict[str, str] | None = None) -> dict[str, np.ndarray]:
    rename = rename or {}
    return {rename.get(name, name): t.detach().cpu().float().numpy().copy()
            for name, t in _named_tensors(model).items()}


def load_arrays(model: torch.nn.Module, arrays: dict[str, np.ndarray],
                rename: dict[str, str] | None = None) -> None:
    rename = rename or {}
    with torch.no_grad():
        for name, tensor in _named_tensors(model).items():
            tensor.copy_(torch.from_numpy(arrays[rename.get(name, name)]).to(tensor.dtype))


def grad_arrays(model: torch.nn.Module, rename: dict[str, str] | None = None) -> dict[str, np.ndarray]:
    rename = rename or {}
    return {rename.get(name, name): p.grad.detach().cpu().float().numpy()
            for name, p in model.named_parameters() if p.grad is not None}


def start(eq: Equivalence, model: torch.nn.Module, loss_terms: int,
          rename: dict[str, str] | None = None) -> None:
    """Deterministic kernels, then the canonical state recorded, exported or loaded."""
    torch.use_deterministic_algorithms(True, warn_only=True)
    loaded = eq.start(state_arrays(model, rename), buffers=buffer_names(model, rename),
                      loss_terms=loss_terms)
    if loaded is not None:
        load_arrays(model, loaded, rename)


def record_activations(eq: Equivalence, layers: list[tuple[str, torch.nn.Module]],
                       forward: Callable[[], object]) -> None:
    """Run ``forward`` once without gradients and record each layer's output, in the order
    the layers ran (a layer's first output only)."""
    seen: list[tuple[str, np.ndarray]] = []

    def hook_for(name):
        def hook(_module, _inputs, output):
            if name not in {n for n, _ in seen}:
                out = output[0] if isinstance(output, (tuple, list)) else output
                seen.append((name, out.detach().cpu().float().numpy()))
        return hook

    handles = [module.register_forward_hook(hook_for(name)) for name, module in layers]
    try:
        with torch.no_grad():
            result = forward()
    finally:
        for handle in handles:
            handle.remove()
    for name, array in seen:
        eq.activation(name, array)
    if isinstance(result, torch.Tensor) and result.dim() == 0:
        eq.activation("loss", result.detach().cpu().float().numpy())
