"""What flows between the workflow hooks: environment, dataset, launch, outcome."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

RunStatus = Literal["success", "failed", "timeout", "hang", "interrupted"]


class ExecutionEnv(BaseModel):
    """The interpreter and environment a run executes in (returned by ``prepare_env``)."""

    python: str = Field(description="Path of the Python interpreter that runs the training script.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")
    framework: str
    framework_version: str | None = None
    isolated: bool = Field(False, description="True when this is a dedicated virtual environment.")
    packages: dict[str, str] = Field(
        default_factory=dict, description="Installed package versions (the lock of the environment)."
    )
    description: str = ""


class DatasetInfo(BaseModel):
    """Where the case's dataset is, in its real on-disk format (returned by ``prepare_data``)."""

    kind: str
    path: str
    files: list[str] = Field(default_factory=list)
    synthesized: bool = Field(description="True when harness generated the data offline.")
    seed: int | None = None
    description: str = ""


class LaunchSpec(BaseModel):
    """How to start the training processes (returned by ``run``); the core executes it."""

    argv: list[str] = Field(description="Command as an argument list; never a shell string.")
    env: dict[str, str] = Field(default_factory=dict, description="Variables added to the environment.")
    cwd: str | None = None
    nproc: int = 1
    nnodes: int = 1
    log_format: str = Field(description="Log format of the output, used for live progress.")
    description: str = ""


class ProcessOutcome(BaseModel):
    """What executing a launch produced (returned by ``execute``)."""

    status: RunStatus
    exit_code: int | None = None
    reason: str | None = None
    log_path: str
    started_at: datetime
    finished_at: datetime
    extras: dict[str, Any] = Field(
        default_factory=dict,
        description="Measurements added by wrappers of execute, e.g. a vendor's device monitor.",
    )

    @property
    def duration_s(self) -> float:
        return (self.finished_at - self.started_at).total_seconds()
