"""A framework's trace of an equivalence run, as its training script wrote it."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from harness.errors import UserInputError

#: The trace format the scripts write (``equivalence.TRACE_VERSION`` in shared_scripts).
TRACE_VERSION = 1


class Checksum(BaseModel):
    """Statistics of one layer's output for the first batch (see ``equivalence.checksum``)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    shape: list[int]
    mean: float
    abs_mean: float
    rms: float
    probe: float


class Trace(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    framework: str
    framework_version: str
    parameters: dict[str, list[int]] = Field(description="canonical name -> shape (buffers included)")
    init: dict[str, dict[str, float]] = Field(
        default_factory=dict, description="canonical name -> mean and std of the framework's own "
                                          "initialisation, before a loaded state replaced it")
    buffers: list[str] = Field(default_factory=list, description="entries of parameters that are "
                                                                 "not trained (running statistics)")
    precision: str = Field("fp32", description="the check run's arithmetic (fp32 or fp64)")
    growth: float = Field(1.0, description="the case's measured per-step growth of a difference "
                                           "(CaseSpec.equivalence_growth)")
    safety: float = Field(1.0, description="the case's factor on every tolerance "
                                           "(CaseSpec.equivalence_safety)")
    loss_terms: int = Field(1, description="terms a step's loss averages (tokens, predictions, images)")
    activations: list[Checksum] = Field(description="layer outputs of the first batch, in order")
    losses: list[float] = Field(description="loss of steps 1..N")
    grad_norm_step1: float | None = Field(description="global gradient norm of step 1, before clipping")
    grad_norms_step1: dict[str, float] = Field(description="canonical name -> step 1 gradient norm")
    notes: list[str] = Field(default_factory=list)

    @property
    def parameter_count(self) -> int:
        count = 0
        for name, shape in self.parameters.items():
            if name in self.buffers:
                continue
            n = 1
            for dim in shape:
                n *= dim
            count += n
        return count


def read_trace(path: Path) -> Trace:
    try:
        trace = Trace.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, ValidationError) as exc:
        raise UserInputError(f"{path}: not an equivalence trace ({str(exc).splitlines()[0]})") from None
    if trace.version != TRACE_VERSION:
        raise UserInputError(f"{path}: trace version {trace.version}, this harness reads {TRACE_VERSION}")
    return trace
