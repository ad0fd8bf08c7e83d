"""The MXNet script's side of ``harness equivalence``: the Gluon networks' parameters under
the canonical positional CNN names (``equivalence.positional_names`` in
harness_cases/shared_scripts), and the per-layer activation checksums of the first batch.

Gluon's layouts are the canonical ones (``Dense`` weights ``[units, in_units]``, convolution
weights ``[out, in, kh, kw]``); its parameter names carry a block prefix
(``resnetv10_conv0_weight``) whose last part is the parameter's own name (``weight``,
``gamma``, ``beta``, ``running_mean``, ``running_var``). The network runs imperatively (not
hybridized) in an equivalence run, so that the hooks see every layer.
"""

from __future__ import annotations

from typing import Callable

import mxnet as mx
import numpy as np
from mxnet import autograd, gluon

from equivalence import Equivalence, host_array, positional_names

#: The CNN layers named by position: kind and parameter names (Gluon's own -> canonical).
CNN_LAYERS = {gluon.nn.Conv2D: ("conv", {"weight": "weight"}),
              gluon.nn.BatchNorm: ("bn", {"gamma": "weight", "beta": "bias",
                                          "running_mean": "running_mean",
                                          "running_var": "running_var"}),
              gluon.nn.Dense: ("fc", {"weight": "weight", "bias": "bias"})}


def layer_order(net, forward: Callable[[], object]) -> list:
    """``(block, kind)`` of the network's CNN layers in the order ``forward`` runs them
    (outside ``autograd.record``: inference mode, running statistics untouched)."""
    order: list = []
    handles = []

    def visit(block):
        if type(block) in CNN_LAYERS:
            handles.append(block.register_forward_hook(
                lambda b, _i, _o: order.append((b, CNN_LAYERS[type(b)][0]))))
        for child in block._children.values():
            visit(child)

    visit(net)
    try:
        forward()
    finally:
        for handle in handles:
            handle.detach()
    return order


def float32_batch_norm_eps(net, eq: Equivalence) -> None:
    """Each batch norm's epsilon as ``eq.hyper`` passes it (in fp64, a float32 value: Paddle's
    batch norm takes its epsilon as float32, MXNet's and PyTorch's as float64)."""
    if isinstance(net, gluon.nn.BatchNorm):
        net._kwargs["eps"] = eq.hyper(net._kwargs["eps"])
    for child in net._children.values():
        float32_batch_norm_eps(child, eq)


def canonical_names(order: list) -> dict[str, str]:
    """Gluon parameter names -> canonical names, from the layers' order."""
    rename = {}
    suffixes = {kind: names for kind, names in CNN_LAYERS.values()}
    layers = []
    for block, kind in order:
        layers.append((block.name, kind))
    by_layer = positional_names(layers, suffixes)
    for block, kind in order:
        for param in block.params.values():
            own = param.name[len(block.prefix):] if param.name.startswith(block.prefix) else \
                param.name.rsplit("_", 1)[-1]
            canonical = by_layer.get(f"{block.name}.{own}")
            if canonical is not None:
                rename[param.name] = canonical
    return rename


def state_arrays(net, rename: dict[str, str]) -> dict[str, np.ndarray]:
    return {rename[name]: host_array(p.data().asnumpy())
            for name, p in net.collect_params().items() if name in rename}


def buffer_names(net, rename: dict[str, str]) -> list[str]:
    return [rename[name] for name, p in net.collect_params().items()
            if name in rename and p.grad_req == "null"]


def load_arrays(net, arrays: dict[str, np.ndarray], rename: dict[str, str]) -> None:
    for name, p in net.collect_params().items():
        if name in rename:
            p.set_data(mx.nd.array(arrays[rename[name]], dtype=p.dtype))


def grad_arrays(net, rename: dict[str, str], scale: float) -> dict[str, np.ndarray]:
    """The gradients as the trainer applies them: Gluon sums the batch's, ``Trainer.step``
    divides by the batch size (``scale``)."""
    return {rename[name]: p.grad().asnumpy() * scale for name, p in net.collect_params().items()
            if name in rename and p.grad_req != "null"}


def start(eq: Equivalence, net, rename: dict[str, str], loss_terms: int) -> None:
    loaded = eq.start(state_arrays(net, rename), buffers=buffer_names(net, rename),
                      loss_terms=loss_terms)
    if loaded is not None:
        load_arrays(net, loaded, rename)


def record_activations(eq: Equivalence, layers: list, forward: Callable[[], object]) -> None:
    """Run ``forward`` once in training mode without recording gradients and record each
    layer's output, in the order the layers ran (a layer's first output only), then the loss
    ``forward`` returns."""
    outputs = eq.first_outputs()
    handles = [block.register_forward_hook(
        lambda _b, _i, output, name=name: outputs.add(name, output.asnumpy))
        for name, block in layers]
    try:
        with autograd.train_mode():
            result = forward()
    finally:
        for handle in handles:
            handle.detach()
    outputs.record(result)
