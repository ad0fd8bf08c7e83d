"""Tolerances of the equivalence check, derived from fp32 rounding.

Two correct fp32 implementations of the same computation differ only in rounding: they add
the same products in a different order (another blocking of the matrix product, another
reduction tree). The derivation:

1. One fp32 operation rounds with a relative error of at most the unit roundoff
   ``u = 2**-24`` (about 6.0e-8).
2. A sum of ``k`` products computed in two orders differs, relative to its size, by about
   ``sqrt(k) * u``: the rounding errors are independent and of either sign, so they grow
   like a random walk (the probabilistic error analysis of Higham and Mary, SIAM J. Sci.
   Comput. 41(5), 2019; the worst case ``k * u`` is far too loose to catch anything).
3. Through a network the relative errors of successive layers add (to first order), so a
   layer's output differs by ``u * S`` relative, where ``S`` sums ``sqrt(k)`` over the
   reductions up to it: each weight tensor's fan-in (a dense layer's input width, a
   convolution's ``in * kh * kw``, the tied output layer's width), plus one for the layer's
   own rounding. A checksum names its layer by the canonical prefix of the layer's weights
   (``blocks.0``), so the weights up to a layer are those of its prefix and of the layers
   before it; the loss adds the rest and ``sqrt(N)`` for its mean over ``N`` terms. ``S``
   comes from the canonical parameter shapes: no knowledge of the architecture is needed.
   A batch norm in training mode is a reduction too: its mean and variance average each
   channel over the batch and the positions (``k = N * H * W`` of the convolution before it,
   from that layer's checksum shape), and the normalised output inherits their error.
4. Step 1's gradients take a backward pass as well (two products per weight, each of the
   same kind): ``2 * u * S`` on top of the forward pass's, ``3 * u * S`` in all.
5. Each optimizer step applies an update computed from such gradients, so after ``t`` steps
   the weights carry ``t`` such perturbations; to first order they add, and the loss of step
   ``t`` differs by ``u * S * (1 + 3 * (t - 1))`` relative. The final weights are compared as
   a whole: the norm of their difference relative to the norm of what training changed
   (``final - initial``), against the last step's tolerance.

The tolerances are these estimates (``LAMBDA`` = 1: the typical size of the random walk,
not a bound). Measured on the smoke GPT (PyTorch against Paddle, CPU) the differences are
2 to 20 times below them; a real difference of the workload lies above: Paddle's GeLU
switched from tanh to erf changes the first block's output by 8e-6 relative against a
tolerance of 3.4e-6 there, and the final weights by 1.2e-3 of the update against 1.4e-4.

A case may state two measured corrections (``CaseSpec``), recorded in each trace:

- ``equivalence_growth``: a training that amplifies a difference of the weights more than
  first order, ``growth`` times per step (the smoke CNNs: about a hundredfold, measured by
  perturbing the initial weights by 1e-7 in one framework), multiplies the loss tolerance of
  step ``t`` by ``growth^(t-1)``;
- ``equivalence_safety``: a model that loses more digits than the estimate counts (a batch
  norm centring channels whose batch mean far exceeds their spread, where every framework
  loses those digits) multiplies every tolerance.

A check's arithmetic is the case's ``equivalence_precision``: fp32 (``u = 2^-24``) or fp64
(``u = 2^-53``), for cases whose training amplifies fp32 rounding beyond use in a few steps.

Adam divides each update by the root of its second moment: a gradient element that is zero
but for rounding (the attention's key bias, whose gradient cancels exactly) takes an update
of either sign, which first-order growth does not cover. That is why the final weights are
judged as a whole, and the tensor that differs most is reported, not judged.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

#: fp32 unit roundoff.
UNIT_ROUNDOFF = 2.0 ** -24
#: Unit roundoff of each arithmetic a check runs in (``CaseSpec.equivalence_precision``).
UNIT_ROUNDOFFS = {"fp32": UNIT_ROUNDOFF, "fp64": 2.0 ** -53}
#: The constant of the probabilistic bound: the tolerances are this many times the estimate.
LAMBDA = 1.0


class Tolerance(BaseModel):
    """The tolerances of one case, from its canonical parameter shapes and the loss's terms."""

    unit_roundoff: float = UNIT_ROUNDOFF
    safety: float = LAMBDA
    path_sum: float = Field(description="S: the sum of sqrt(k) over the reductions of a forward pass")
    forward: float = Field(description="relative tolerance of the first batch's activations and step 1's loss")
    gradient: float = Field(description="relative tolerance of step 1's gradient norms")
    layers: dict[str, float] = Field(default_factory=dict,
                                     description="relative tolerance of each layer's output")
    growth: float = Field(1.0, description="the case's measured growth of a difference per step")
    formula: str = "LAMBDA * u * S * (1 + 3 * (t - 1)) * growth^(t - 1) relative, at step t"

    def loss(self, step: int) -> float:
        """Relative tolerance of the loss of ``step`` (1-based)."""
        return self.forward * (1 + 3 * (step - 1)) * self.growth ** (step - 1)


def _fan_in_roots(shapes: dict[str, list[int]], buffers: list[str]) -> dict[str, float]:
    """``sqrt(fan-in)`` of every weight tensor of two or more dimensions (its first
    dimension is the output's)."""
    return {name: math.sqrt(math.prod(shape[1:])) for name, shape in shapes.items()
            if name not in buffers and len(shape) >= 2}


def path_sum(shapes: dict[str, list[int]], buffers: list[str], loss_terms: int) -> float:
    """``S`` of the whole forward pass and its loss."""
    return sum(_fan_in_roots(shapes, buffers).values()) + math.sqrt(max(loss_terms, 1))


def _batch_norm_roots(shapes: dict[str, list[int]], layer_shapes: dict[str, list[int]]
                      ) -> dict[str, float]:
    """``sqrt(k)`` of each batch norm's statistics: ``bn.i`` (the positional CNN names)
    averages conv ``i``'s output over the batch and the positions, ``k = N * H * W``."""
    roots = {}
    for name in shapes:
        if name.startswith("bn.") and name.endswith(".weight"):
            conv = layer_shapes.get("conv." + name.split(".")[1])
            if conv and len(conv) >= 2:
                roots[name] = math.sqrt(math.prod(conv) / conv[1])
    return roots


def tolerance_for(shapes: dict[str, list[int]], buffers: list[str], loss_terms: int,
                  layers: list[str] = (), layer_shapes: dict[str, list[int]] | None = None,
                  precision: str = "fp32", growth: float = 1.0, safety: float = 1.0) -> Tolerance:
    """The tolerances of a model of these canonical shapes whose first batch's checksums are
    of ``layers`` (in data-flow order, their output shapes ``layer_shapes``), computed in
    ``precision`` (fp32 or fp64: the unit roundoff ``u``), by a training whose differences
    grow ``growth`` times per step (``CaseSpec.equivalence_growth``), each tolerance ``safety``
    times the estimate (``CaseSpec.equivalence_safety``)."""
    u = UNIT_ROUNDOFFS[precision]
    roots = {**_fan_in_roots(shapes, buffers), **_batch_norm_roots(shapes, layer_shapes or {})}
    s = sum(roots.values()) + math.sqrt(max(loss_terms, 1))
    lam = LAMBDA * safety
    forward = lam * u * s
    per_layer, counted, cumulative = {}, set(), 0.0
    for layer in layers:
        if layer == "loss":
            per_layer[layer] = forward
            continue
        # A convolution's output takes its own weights and the batch norm before it.
        previous = f"bn.{int(layer.split('.')[1]) - 1}." if layer.startswith("conv.") else None
        mine = {n for n in roots if n not in counted and (
            n.startswith(layer + ".") or (previous is not None and n.startswith(previous)))}
        counted |= mine
        cumulative += sum(roots[n] for n in mine)
        per_layer[layer] = lam * u * (1.0 + cumulative)
    return Tolerance(unit_roundoff=u, safety=lam, growth=growth, path_sum=s, forward=forward, gradient=3 * forward, layers=per_layer)
