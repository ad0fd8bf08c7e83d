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


def _host(tensor: torch.Tensor) -> np.ndarray:
    """float64 as it is (an fp64 check), any other float as float32."""
    tensor = tensor.detach().cpu()
    return (tensor if tensor.dtype == torch.float64 else tensor.float()).numpy()


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
    return {rename.get(name, name): _host(t).copy()
            for name, t in _named_tensors(model).items()}


def load_arrays(model: torch.nn.Module, arrays: dict[str, np.ndarray],
                rename: dict[str, str] | None = None) -> None:
    rename = rename or {}
    with torch.no_grad():
        for name, tensor in _named_tensors(model).items():
            tensor.copy_(torch.from_numpy(arrays[rename.get(name, name)]).to(tensor.dtype))


def grad_arrays(model: torch.nn.Module, rename: dict[str, str] | None = None) -> dict[str, np.ndarray]:
    rename = rename or {}
    return {rename.get(name, name): _host(p.grad)
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
    the layers ran (a layer's first output only), then the loss ``forward`` returns."""
    outputs = eq.first_outputs()

    def hook_for(name):
        def hook(_module, _inputs, output):
            out = output[0] if isinstance(output, (tuple, list)) else output
            outputs.add(name, lambda: _host(out))
        return hook

    handles = [module.register_forward_hook(hook_for(name)) for name, module in layers]
    try:
        with torch.no_grad():
            result = forward()
    finally:
        for handle in handles:
            handle.remove()
    outputs.record(_host(result) if isinstance(result, torch.Tensor) else None)


#: The CNN layers named by position (``equivalence.positional_names``): kind and parameter names.
CNN_LAYERS = {torch.nn.Conv2d: ("conv", {"weight": "weight"}),
              torch.nn.BatchNorm2d: ("bn", {"weight": "weight", "bias": "bias",
                                            "running_mean": "running_mean",
                                            "running_var": "running_var"}),
              torch.nn.Linear: ("fc", {"weight": "weight", "bias": "bias"})}


def float32_batch_norm_eps(model: torch.nn.Module, eq: Equivalence) -> None:
    """Each batch norm's epsilon as ``eq.hyper`` passes it (in fp64, a float32 value: Paddle's
    batch norm takes its epsilon as float32, PyTorch's and MXNet's as float64)."""
    for module in model.modules():
        if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
            module.eps = eq.hyper(module.eps)


def layer_order(model: torch.nn.Module, forward: Callable[[], object]) -> list[tuple[str, str, torch.nn.Module]]:
    """``(name, kind, module)`` of the model's CNN layers in the order ``forward`` runs them
    (in eval mode without gradients: running statistics untouched)."""
    names = {module: name for name, module in model.named_modules()}
    order: list = []
    hooks = [module.register_forward_hook(
        lambda m, _i, _o, kind=CNN_LAYERS[type(module)][0]: order.append((names[m], kind, m)))
        for module in model.modules() if type(module) in CNN_LAYERS]
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            forward()
    finally:
        for hook in hooks:
            hook.remove()
        model.train(was_training)
    return order
