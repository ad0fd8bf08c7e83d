"""The training scripts' side of ``harness equivalence`` (numpy and the standard library only).

When the resolved config carries an ``equivalence`` section, a training script:

1. reports its parameters under their canonical names (see below) and, when asked, writes them
   to ``export_state`` (``.npz``) or replaces them with those of ``initial_state`` before step 1;
2. runs the forward pass of the first batch once before training and records a checksum of
   each layer's output (``activation``), the layers in the order the data flows;
3. trains on the batches of ``batches`` (one seeded order of sample indices, the same in
   every framework) and records the loss of every step, the gradient norms of step 1 (before
   clipping) and, at the end, its final parameters (``final_state``).

Everything it records goes to the JSON ``trace`` file, which harness compares across
frameworks (``harness.equivalence``).

Canonical names: each model family has one naming, the harness's own models' module paths
(e.g. GPT's ``blocks.0.attn.qkv.weight``), and one layout: a dense layer's weight is
``[out_features, in_features]``, a convolution's ``[out, in, kh, kw]``, an embedding's
``[rows, width]``; a framework whose layer stores a weight otherwise transposes it on the way
in and out. Tied weights appear once (under the embedding's name). A framework's mapping to
and from these names lives with its training scripts; ``docs/equivalence.md`` lists them.
"""

from __future__ import annotations

import json
import math
import os
from typing import Iterator

import numpy as np

#: Trace format version; harness refuses a trace of another version.
TRACE_VERSION = 1


def _probe(size: int) -> np.ndarray:
    """A fixed, dense weighting of a flattened tensor's elements, the same in every
    environment (no random generator whose stream could differ between numpy versions)."""
    return np.cos(np.arange(size, dtype=np.float64) * 0.7548776662466927)


def checksum(array) -> dict:
    """Statistics of one tensor that change when any element changes: mean, mean absolute
    value, root mean square and a fixed weighted sum (``probe``) of the elements in order."""
    values = np.asarray(array, dtype=np.float64).ravel()
    n = max(values.size, 1)
    return {"shape": list(np.shape(array)), "mean": float(values.sum() / n),
            "abs_mean": float(np.abs(values).sum() / n),
            "rms": float(math.sqrt(float((values * values).sum()) / n)),
            "probe": float(values @ _probe(values.size) / math.sqrt(n))}


def _moments(array) -> dict:
    values = np.asarray(array, dtype=np.float64).ravel()
    return {"mean": float(values.mean()) if values.size else 0.0,
            "std": float(values.std()) if values.size else 0.0}


def read_setting(config_path: str) -> dict | None:
    """The resolved config's ``equivalence`` section, or None for an ordinary run."""
    with open(config_path, encoding="utf-8") as handle:
        return json.load(handle).get("equivalence")


class Equivalence:
    """One framework's record of an equivalence run; see the module docstring."""

    def __init__(self, setting: dict, framework: str, framework_version: str):
        self.setting = setting
        #: The check's arithmetic: fp64 (the case's ``equivalence_precision``) has the script
        #: build its model, data and optimizer in float64 (``dtype``) and pass its optimizer
        #: the hyper-parameters through ``hyper``.
        self.precision = setting.get("precision", "fp32")
        self.dtype = np.float64 if self.precision == "fp64" else np.float32
        self.trace: dict = {
            "version": TRACE_VERSION, "framework": framework, "framework_version": framework_version,
            "precision": self.precision, "growth": float(setting.get("growth", 1.0)),
            "safety": float(setting.get("safety", 1.0)),
            "parameters": {}, "init": {}, "buffers": [], "loss_terms": 1, "activations": [], "losses": [], "grad_norm_step1": None,
            "grad_norms_step1": {}, "notes": [],
        }

    @classmethod
    def from_config(cls, config_path: str, framework: str, framework_version: str
                    ) -> "Equivalence | None":
        setting = read_setting(config_path)
        return None if setting is None else cls(setting, framework, framework_version)

    @property
    def float64(self) -> bool:
        return self.precision == "fp64"

    def hyper(self, value: float) -> float:
        """An optimizer hyper-parameter (learning rate, momentum, weight decay) as the script
        passes it. In fp64, the nearest float32 value: MXNet's and Paddle's optimizer kernels
        take their hyper-parameters as float32 and PyTorch's as float64, a difference of up to
        6e-8 relative in every update that the smoke CNNs amplify a hundredfold per step."""
        return float(np.float32(value)) if self.float64 else float(value)

    def note(self, text: str) -> None:
        """Something the framework does differently that the comparison should show."""
        self.trace["notes"].append(text)

    def start(self, parameters: dict[str, np.ndarray], buffers=(), loss_terms: int = 1
              ) -> dict[str, np.ndarray] | None:
        """Record the model's canonical state (``buffers`` names the entries that are not
        trained, e.g. BatchNorm's running statistics) and how many terms a step's loss
        averages (``loss_terms``: tokens, predictions or images); write the state when
        ``export_state`` asks;
        return the arrays of ``initial_state`` to load in its place (names and shapes
        checked), or None to train from the framework's own initialisation."""
        self.trace["parameters"] = {name: list(np.shape(a)) for name, a in parameters.items()}
        # The framework's own initialisation, before any state replaces it: ordinary runs
        # train from it, so its distribution is compared too.
        self.trace["init"] = {name: _moments(a) for name, a in parameters.items()}
        self.trace["buffers"] = sorted(buffers)
        self.trace["loss_terms"] = int(loss_terms)
        if self.setting.get("export_state"):
            _save(self.setting["export_state"], parameters)  # float32 values: exact in float64
        path = self.setting.get("initial_state")
        if not path:
            return None
        with np.load(path) as loaded:
            state = {name: loaded[name] for name in loaded.files}
        missing = sorted(set(parameters) - set(state))
        extra = sorted(set(state) - set(parameters))
        wrong = sorted(n for n in parameters if n in state
                       and tuple(np.shape(state[n])) != tuple(np.shape(parameters[n])))
        if missing or extra or wrong:
            raise SystemExit(
                f"error: the initial state {path} does not fit this model: missing {missing[:5]}, "
                f"unknown {extra[:5]}, other shape {wrong[:5]}")
        return {name: state[name].astype(self.dtype) for name in parameters}

    def batches(self, num_samples: int, batch_size: int, seed: int) -> Iterator[np.ndarray]:
        """Sample indices of each batch: every epoch a permutation of the dataset from one
        seeded generator, cut into whole batches, the same in every framework."""
        if num_samples < batch_size:
            raise SystemExit(f"error: {num_samples} samples make no batch of {batch_size}")
        generator = np.random.RandomState(seed)  # MT19937: one stream in every numpy version
        while True:
            order = generator.permutation(num_samples)
            for start in range(0, num_samples - batch_size + 1, batch_size):
                yield order[start:start + batch_size]

    def activation(self, name: str, array) -> None:
        self.trace["activations"].append({"name": name, **checksum(array)})

    def first_outputs(self) -> "FirstOutputs":
        """A collector for a framework's forward hooks (see ``FirstOutputs``)."""
        return FirstOutputs(self)

    def gradients(self, grads: dict[str, np.ndarray]) -> None:
        """Step 1's gradients (canonical names, before clipping): each one's norm and the
        global norm, in float64."""
        squares = {name: float((np.asarray(g, dtype=np.float64) ** 2).sum()) for name, g in grads.items()}
        self.trace["grad_norms_step1"] = {name: math.sqrt(s) for name, s in squares.items()}
        self.trace["grad_norm_step1"] = math.sqrt(sum(squares.values()))

    def step(self, step: int, loss: float) -> None:
        if step != len(self.trace["losses"]) + 1:
            raise ValueError(f"equivalence: step {step} recorded out of order")
        self.trace["losses"].append(float(loss))

    def finish(self, parameters: dict[str, np.ndarray]) -> None:
        """Write the final parameters and the trace (the trace last: its presence says the
        run finished)."""
        _save(self.setting["final_state"], parameters, self.dtype)
        tmp = self.setting["trace"] + ".tmp"
        with open(tmp, "w", encoding="utf-8") as handle:
            json.dump(self.trace, handle, indent=1)
        os.replace(tmp, self.setting["trace"])


def host_array(array: np.ndarray) -> np.ndarray:
    """A framework's array as the trace and states keep it: float64 as it is (an fp64 check),
    any other float as float32."""
    return array if array.dtype == np.float64 else array.astype(np.float32)


def positional_names(order: list[tuple[str, str]], suffixes: dict[str, dict[str, str]]
                     ) -> dict[str, str]:
    """Canonical names by position, for networks whose frameworks name their layers
    differently (the CNNs): the k-th convolution the forward pass runs is ``conv.k``, the k-th
    batch norm ``bn.k``, the classifier ``fc``. ``order`` is the framework's layers as
    ``(its name, kind)`` in the order they ran, ``suffixes`` per kind its parameter names ->
    canonical ones (``{"bn": {"_mean": "running_mean", ...}}``). Returns the framework's
    parameter names -> canonical names."""
    counts: dict[str, int] = {}
    rename = {}
    for layer, kind in order:
        index = counts.get(kind, 0)
        counts[kind] = index + 1
        base = kind if kind == "fc" else f"{kind}.{index}"
        prefix = f"{layer}." if layer else ""
        for own, canonical in suffixes[kind].items():
            rename[prefix + own] = f"{base}.{canonical}"
    return rename


class FirstOutputs:
    """Each hooked layer's first output of a forward pass, kept in the order the layers ran,
    then recorded as checksums (``record``); the frameworks' hooks hand their output over as
    a callable returning a numpy array, called only for a layer's first output."""

    def __init__(self, eq: Equivalence):
        self.eq = eq
        self.outputs: dict[str, np.ndarray] = {}

    def add(self, name: str, output) -> None:
        if name not in self.outputs:
            self.outputs[name] = np.asarray(output(), dtype=self.eq.dtype)

    def record(self, loss=None) -> None:
        """Record the outputs, then ``loss`` (a scalar) when given."""
        for name, array in self.outputs.items():
            self.eq.activation(name, array)
        if loss is not None:
            self.eq.activation("loss", np.asarray(loss, dtype=self.eq.dtype).reshape(()))


def _save(path: str, arrays: dict[str, np.ndarray], dtype=np.float32) -> None:
    tmp = path + ".tmp.npz"
    np.savez(tmp, **{name: np.asarray(a, dtype=dtype) for name, a in arrays.items()})
    os.replace(tmp, path)
