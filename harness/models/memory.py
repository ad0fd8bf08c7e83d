"""Per-device memory estimates that the memory planner compares with the device's memory."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from harness.models.case import ParamValue


class MemoryEstimate(BaseModel):
    """Bytes ONE device holds at the run's peak, by component, with the formula that gave them."""

    model_config = ConfigDict(extra="forbid")

    total_bytes: int = Field(ge=0, description="Peak bytes allocated by the framework on one device.")
    components: dict[str, int] = Field(
        default_factory=dict,
        description="What the total is made of, e.g. parameters, gradients, optimizer states, "
                    "activations; the values add up to total_bytes.",
    )
    formula: str = Field("", description="How the figure was computed, in words.")


class MemoryCandidate(BaseModel):
    """One way to run the planned case: the config changes it needs and its estimate."""

    model_config = ConfigDict(extra="forbid")

    overrides: dict[str, ParamValue] = Field(
        default_factory=dict,
        description="Settings or params to change (empty for the config as resolved).",
    )
    estimate: MemoryEstimate
    label: str = Field("", description="A short name, e.g. 'recompute=full, micro batch 1'.")


class MemoryPlan(BaseModel):
    """A framework plugin's memory answer for a planned run (the ``memory_plan`` hook)."""

    model_config = ConfigDict(extra="forbid")

    candidates: list[MemoryCandidate] = Field(
        description="The resolved config first (empty overrides), then alternatives, fastest first.",
    )
    hints: list[str] = Field(
        default_factory=list,
        description="Other layouts that would fit, for the refusal message (e.g. '>= 2 GPUs').",
    )
