"""The Paddle scripts' side of ``harness equivalence``: their models' parameters under the
canonical names (``equivalence.py`` in harness_cases/shared_scripts), and the per-layer
activation checksums of the first batch.

The mapping: ``paddle.nn.Linear`` stores its weight ``[in, out]``, the canonical layout is
``[out, in]``, so those weights are transposed on the way out and in; every other parameter
keeps its layout. ``rename`` maps the model's own names to canonical ones (absent: the same
name). BatchNorm's running statistics (``_mean``, ``_variance``) belong to the state too.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import paddle

from equivalence import Equivalence, host_array


def _named_tensors(model) -> dict:
    named = dict(model.named_parameters())
    named.update((name, b) for name, b in model.named_buffers()
                 if b is not None and b.dtype in (paddle.float32, paddle.float64))
    return named


def _transposed(model) -> set[str]:
    return {f"{name}.weight" if name else "weight" for name, layer in model.named_sublayers(include_self=True)
            if isinstance(layer, paddle.nn.Linear)}


def buffer_names(model, rename: dict[str, str] | None = None) -> list[str]:
    """Canonical names of the state's entries that are not trained (running statistics)."""
    rename = rename or {}
    # BatchNorm's _mean and _variance are parameters that do not train (stop_gradient).
    trained = {name for name, p in model.named_parameters() if not p.stop_gradient}
    return [rename.get(name, name) for name in _named_tensors(model) if name not in trained]


def state_arrays(model, rename: dict[str, str] | None = None) -> dict[str, np.ndarray]:
    rename, transposed = rename or {}, _transposed(model)
    out = {}
    for name, tensor in _named_tensors(model).items():
        array = host_array(tensor.numpy())
        out[rename.get(name, name)] = array.T.copy() if name in transposed else array
    return out


def load_arrays(model, arrays: dict[str, np.ndarray], rename: dict[str, str] | None = None) -> None:
    rename, transposed = rename or {}, _transposed(model)
    for name, tensor in _named_tensors(model).items():
        array = arrays[rename.get(name, name)]
        tensor.set_value(np.ascontiguousarray(array.T if name in transposed else array)
                         .astype(np.float64 if tensor.dtype == paddle.float64 else np.float32))


def grad_arrays(model, rename: dict[str, str] | None = None) -> dict[str, np.ndarray]:
    rename, transposed = rename or {}, _transposed(model)
    out = {}
    for name, param in model.named_parameters():
        if param.grad is None:
            continue
        array = host_array(param.grad.numpy())
        out[rename.get(name, name)] = array.T if name in transposed else array
    return out


def start(eq: Equivalence, model, loss_terms: int, rename: dict[str, str] | None = None) -> None:
    """The canonical state recorded, exported or loaded (the launch asked for deterministic
    kernels: ``FLAGS_cudnn_deterministic``)."""
    loaded = eq.start(state_arrays(model, rename), buffers=buffer_names(model, rename),
                      loss_terms=loss_terms)
    if loaded is not None:
        load_arrays(model, loaded, rename)


def record_activations(eq: Equivalence, layers: list, forward: Callable[[], object]) -> None:
    """Run ``forward`` once without gradients and record each layer's output, in the order
    the layers ran (a layer's first output only), then the loss ``forward`` returns."""
    outputs = eq.first_outputs()

    def hook_for(name):
        def hook(_layer, _inputs, output):
            out = output[0] if isinstance(output, (tuple, list)) else output
            outputs.add(name, lambda: out.numpy())
        return hook

    handles = [layer.register_forward_post_hook(hook_for(name)) for name, layer in layers]
    try:
        with paddle.no_grad():
            result = forward()
    finally:
        for handle in handles:
            handle.remove()
    outputs.record(result.numpy() if isinstance(result, paddle.Tensor) else None)


#: The CNN layers named by position (``equivalence.positional_names``): kind and parameter names.
CNN_LAYERS = {paddle.nn.Conv2D: ("conv", {"weight": "weight"}),
              paddle.nn.BatchNorm2D: ("bn", {"weight": "weight", "bias": "bias",
                                             "_mean": "running_mean", "_variance": "running_var"}),
              paddle.nn.Linear: ("fc", {"weight": "weight", "bias": "bias"})}


def layer_order(model, forward: Callable[[], object]) -> list:
    """``(name, kind, layer)`` of the model's CNN layers in the order ``forward`` runs them
    (in eval mode without gradients: running statistics untouched)."""
    names = {id(layer): name for name, layer in model.named_sublayers(include_self=True)}
    order: list = []
    hooks = [layer.register_forward_post_hook(
        lambda m, _i, _o, kind=CNN_LAYERS[type(layer)][0]: order.append((names[id(m)], kind, m)))
        for layer in model.sublayers(include_self=True) if type(layer) in CNN_LAYERS]
    was_training = model.training
    model.eval()
    try:
        with paddle.no_grad():
            forward()
    finally:
        for hook in hooks:
            hook.remove()
        if was_training:
            model.train()
    return order
