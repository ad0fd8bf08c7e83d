"""Per-step metrics parsed from a framework's own log lines."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class StepRecord(BaseModel):
    """One logged training step (or logging interval, or epoch)."""

    step: int
    step_time_s: float | None = Field(None, description="Seconds per iteration.")
    throughput: float | None = Field(None, description="In the log's unit, e.g. tokens/s.")
    samples: int | None = Field(None, description="Samples consumed by this step (global batch).")
    loss: float | None = None
    learning_rate: float | None = None
    memory_bytes: int | None = None


class ParsedLog(BaseModel):
    """What ``parse_log`` returns."""

    format: str
    unit: str | None = None
    steps: list[StepRecord] = Field(default_factory=list)
    framework_reported: float | None = Field(
        None, description="A final throughput the framework printed itself, if any."
    )
    peak_memory_bytes: int | None = None
    errors: list[str] = Field(
        default_factory=list, description="Failure markers: traceback lines, NaN loss, ..."
    )
    meta: dict[str, Any] = Field(default_factory=dict)
