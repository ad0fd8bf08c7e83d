"""Per-step metrics parsed from a framework's own log lines."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class StepRecord(BaseModel):
    """One logged training step (or logging interval, or epoch)."""

    step: int = Field(description="Step (iteration) number as the log counts it.")
    step_time_s: float | None = Field(None, description="Seconds per iteration.")
    throughput: float | None = Field(None, description="In the log's unit, e.g. tokens/s.")
    samples: int | None = Field(None, description="Samples consumed by this step (global batch).")
    loss: float | None = Field(None, description="Training loss logged for the step.")
    learning_rate: float | None = Field(None, description="Learning rate logged for the step.")
    memory_bytes: int | None = Field(None, description="Device memory in use at the step, if logged.")


class ParsedLog(BaseModel):
    """What ``parse_log`` returns."""

    format: str = Field(description="Name of the log format that was parsed.")
    unit: str | None = Field(None, description="Throughput unit of the steps, e.g. tokens/s.")
    steps: list[StepRecord] = Field(default_factory=list, description="The logged steps, in log order.")
    framework_reported: float | None = Field(
        None, description="A final throughput the framework printed itself, if any."
    )
    peak_memory_bytes: int | None = Field(None, description="Peak device memory the log reports.")
    errors: list[str] = Field(
        default_factory=list, description="Failure markers: traceback lines, NaN loss, ..."
    )
    meta: dict[str, Any] = Field(
        default_factory=dict, description="Facts the log states, e.g. global_batch_size, world size."
    )
