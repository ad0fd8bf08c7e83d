"""Comparing two frameworks' traces and final states: the verdict of one framework pair."""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel, Field

from harness.equivalence.tolerance import Tolerance, tolerance_for
from harness.equivalence.trace import Checksum, Trace

_TINY = 1e-30


class StepDifference(BaseModel):
    step: int
    reference: float
    candidate: float
    difference: float = Field(description="|candidate - reference|")
    relative: float = Field(description="difference / |reference|")
    tolerance: float = Field(description="relative tolerance of this step")

    @property
    def passed(self) -> bool:
        return self.relative <= self.tolerance


class LayerDifference(BaseModel):
    name: str
    relative: float = Field(description="largest difference of the checksum's statistics, "
                                        "relative to the reference layer's rms")
    tolerance: float

    @property
    def passed(self) -> bool:
        return self.relative <= self.tolerance


class PairVerdict(BaseModel):
    """One framework against the reference framework."""

    reference: str
    candidate: str
    parameter_count: tuple[int, int]
    shape_differences: list[str] = Field(description="'name: reference shape vs candidate shape', "
                                                     "or a name only one side has")
    init_differences: list[str] = Field(
        default_factory=list, description="tensors whose own initialisation (mean, std) differs "
                                          "beyond sampling error")
    tolerance: Tolerance
    steps: list[StepDifference]
    grad_norm: StepDifference | None = Field(description="step 1's global gradient norm")
    worst_gradient: tuple[str, float] | None = Field(
        None, description="the parameter whose step 1 gradient norm differs most (relative)")
    layers: list[LayerDifference] = Field(description="first batch, layer by layer")
    first_divergence: str | None = Field(
        description="the first layer (in data-flow order) whose output differs beyond tolerance, "
                    "or the first failing check when the activations agree")
    final_weights: tuple[str, float] | None = Field(
        None, description="the tensor whose final weights differ most: ||b - a|| / ||a|| "
                          "(reported, not judged: see harness.equivalence.tolerance)")
    final_change: float | None = Field(
        None, description="||final b - final a|| / ||final a - initial|| over all parameters")
    final_tolerance: float = 0.0
    problems: list[str] = Field(default_factory=list, description="why the pair fails")

    @property
    def passed(self) -> bool:
        return not self.problems

    @property
    def max_loss_difference(self) -> float | None:
        return max((s.difference for s in self.steps), default=None)

    @property
    def max_loss_relative(self) -> float | None:
        return max((s.relative for s in self.steps), default=None)


#: Standard errors a sample's std or mean may be off by before two initialisations differ.
INIT_SIGMAS = 6.0


def init_differences(reference: Trace, candidate: Trace) -> list[str]:
    """Tensors whose two initialisations are not draws from one distribution: for ``n``
    elements of std ``s`` the sample std's standard error is ``s / sqrt(2n)`` and the mean's
    ``s / sqrt(n)``; constants (std 0) must agree exactly."""
    out = []
    for name, a in reference.init.items():
        b, shape = candidate.init.get(name), reference.parameters.get(name)
        if b is None or shape is None or shape != candidate.parameters.get(name):
            continue
        n = max(1, math.prod(shape))
        std = max(a["std"], b["std"])
        if std == 0.0:
            same = a["mean"] == b["mean"]
        else:
            same = (abs(a["std"] - b["std"]) <= INIT_SIGMAS * std / math.sqrt(2 * n)
                    and abs(a["mean"] - b["mean"]) <= INIT_SIGMAS * std / math.sqrt(n))
        if not same:
            out.append(f"{name}: mean {a['mean']:.3g} std {a['std']:.3g} vs mean {b['mean']:.3g} "
                       f"std {b['std']:.3g}")
    return out


def _relative(a: float, b: float) -> float:
    return abs(b - a) / max(abs(a), _TINY)


def _layer_difference(a: Checksum, b: Checksum) -> float:
    scale = max(a.rms, _TINY)
    return max(abs(getattr(b, f) - getattr(a, f)) for f in ("mean", "abs_mean", "rms", "probe")) / scale


def compare_traces(reference: Trace, candidate: Trace,
                   states: tuple[dict, dict, dict] | None = None) -> PairVerdict:
    """The verdict of ``candidate`` against ``reference``; ``states`` are the initial state
    and the two final states (canonical name -> array), when all were written."""
    tol = tolerance_for(reference.parameters, reference.buffers, reference.loss_terms,
                        [c.name for c in reference.activations],
                        {c.name: c.shape for c in reference.activations},
                        precision=reference.precision, growth=reference.growth,
                        safety=reference.safety)
    problems: list[str] = []
    if candidate.precision != reference.precision:
        problems.append(f"{candidate.framework} ran in {candidate.precision}, "
                        f"{reference.framework} in {reference.precision}")
    shapes = []
    for name in sorted(set(reference.parameters) | set(candidate.parameters)):
        a, b = reference.parameters.get(name), candidate.parameters.get(name)
        if a != b:
            shapes.append(f"{name}: {a} vs {b}" if a and b else
                          f"{name}: only in {reference.framework if a else candidate.framework}")
    if shapes:
        problems.append(f"{len(shapes)} parameter(s) differ in name or shape (first: {shapes[0]})")
    if reference.parameter_count != candidate.parameter_count:
        problems.append(f"parameter count {reference.parameter_count:,} vs {candidate.parameter_count:,}")

    init = init_differences(reference, candidate)
    if init:
        problems.append(f"the frameworks' own initialisations differ in {len(init)} tensor(s) "
                        f"(first: {init[0]})")

    layers: list[LayerDifference] = []
    by_name = {c.name: c for c in candidate.activations}
    missing_layers = [c.name for c in reference.activations if c.name not in by_name]
    for checksum in reference.activations:
        other = by_name.get(checksum.name)
        if other is None:
            continue
        if other.shape != checksum.shape:
            layers.append(LayerDifference(name=checksum.name, relative=float("inf"),
                                          tolerance=tol.layers[checksum.name]))
            continue
        layers.append(LayerDifference(name=checksum.name, relative=_layer_difference(checksum, other),
                                      tolerance=tol.layers[checksum.name]))
    diverged = [layer for layer in layers if not layer.passed]
    if diverged:
        problems.append(f"the first batch's output of {diverged[0].name} differs by "
                        f"{diverged[0].relative:.2e} relative (tolerance {diverged[0].tolerance:.2e})")
    if missing_layers:
        problems.append(f"layers without a checksum in {candidate.framework}: {', '.join(missing_layers)}")

    steps = [StepDifference(step=i + 1, reference=a, candidate=b, difference=abs(b - a),
                            relative=_relative(a, b), tolerance=tol.loss(i + 1))
             for i, (a, b) in enumerate(zip(reference.losses, candidate.losses))]
    if len(reference.losses) != len(candidate.losses):
        problems.append(f"{len(reference.losses)} vs {len(candidate.losses)} steps recorded")
    failing_steps = [s.step for s in steps if not s.passed]
    if failing_steps:
        problems.append(f"loss beyond tolerance at steps {_ranges(failing_steps)}")

    grad = None
    if reference.grad_norm_step1 is not None and candidate.grad_norm_step1 is not None:
        a, b = reference.grad_norm_step1, candidate.grad_norm_step1
        grad = StepDifference(step=1, reference=a, candidate=b, difference=abs(b - a),
                              relative=_relative(a, b), tolerance=tol.gradient)
        if not grad.passed:
            problems.append(f"step 1 gradient norm {a:.7g} vs {b:.7g}")
    worst_gradient = max(((name, _relative(g, candidate.grad_norms_step1[name]))
                          for name, g in reference.grad_norms_step1.items()
                          if name in candidate.grad_norms_step1),
                         key=lambda item: item[1], default=None)

    final = final_change = None
    final_tol = tol.loss(max(len(steps), 1))
    if states is not None:
        initial, final_a, final_b = states
        final = _worst_tensor(final_a, final_b)
        # The trained parameters: running statistics follow each framework's own convention
        # (a case's equivalence_notes), and training normalises with the batch's statistics.
        trained = {n: v for n, v in initial.items() if n not in reference.buffers}
        final_change = _relative_to_update(trained, final_a, final_b)
        if final_change is not None and final_change > final_tol:
            problems.append(f"final weights differ by {final_change:.2e} of what training changed "
                            f"(tolerance {final_tol:.2e}; most in {final[0] if final else '?'})")

    first = next((layer.name for layer in layers if not layer.passed), None)
    if first is None and problems:
        first = ("step 1 loss" if steps and not steps[0].passed
                 else "step 1 gradients (backward)" if grad is not None and not grad.passed
                 else None)
    return PairVerdict(
        reference=reference.framework, candidate=candidate.framework,
        parameter_count=(reference.parameter_count, candidate.parameter_count),
        shape_differences=shapes, init_differences=init, tolerance=tol, steps=steps, grad_norm=grad,
        worst_gradient=worst_gradient, layers=layers, first_divergence=first,
        final_weights=final, final_change=final_change, final_tolerance=final_tol,
        problems=problems,
    )


def _worst_tensor(a: dict, b: dict) -> tuple[str, float] | None:
    import numpy as np

    worst = None
    for name in sorted(set(a) & set(b)):
        x, y = np.asarray(a[name], dtype=np.float64), np.asarray(b[name], dtype=np.float64)
        if x.shape != y.shape:
            continue
        rel = float(np.linalg.norm(y - x) / max(float(np.linalg.norm(x)), _TINY))
        if worst is None or rel > worst[1]:
            worst = (name, rel)
    return worst


def _relative_to_update(initial: dict, a: dict, b: dict) -> float | None:
    import numpy as np

    names = [n for n in a if n in b and n in initial and np.shape(a[n]) == np.shape(b[n])]
    if not names:
        return None
    diff = sum(float(((np.asarray(b[n], np.float64) - a[n]) ** 2).sum()) for n in names)
    update = sum(float(((np.asarray(a[n], np.float64) - initial[n]) ** 2).sum()) for n in names)
    return (diff / max(update, _TINY)) ** 0.5


def load_state(path: Path) -> dict:
    import numpy as np

    with np.load(path) as loaded:
        return {name: loaded[name] for name in loaded.files}


def _ranges(steps: list[int]) -> str:
    """``[1, 2, 3, 7]`` -> ``1-3, 7``."""
    parts, start = [], None
    for i, step in enumerate(steps):
        if start is None:
            start = step
        if i + 1 == len(steps) or steps[i + 1] != step + 1:
            parts.append(str(start) if start == step else f"{start}-{step}")
            start = None
    return ", ".join(parts)
