"""What flows between the workflow hooks: environment, dataset, launch, outcome."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

#: invalid: the run finished, but what the training script says it built and ran (its
#: read-back line) differs from the resolved config, so its figure is not the case's.
RunStatus = Literal["success", "failed", "timeout", "hang", "interrupted", "terminated", "invalid"]

#: Where an isolated environment came from, as ExecutionEnv and the result's environment say it.
EnvRequirements = Annotated[list[str], Field(
    default_factory=list, description="The pip requirements an isolated environment was built "
                                      "from, the framework's first (framework_requirement where "
                                      "a run sets one); empty for an interpreter harness did not "
                                      "build.")]
Wheelhouse = Annotated[str | None, Field(
    None, description="The local folder of wheels an isolated environment was built from "
                      "offline; None when its packages came from the package indexes.")]


class ExecutionEnv(BaseModel):
    """The interpreter and environment a run executes in (returned by ``prepare_env``)."""

    python: str = Field(description="Path of the Python interpreter that runs the training script.")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")
    framework: str = Field(description="Name of the framework this environment runs.")
    framework_version: str | None = Field(None, description="Installed framework version, recorded in the result.")
    framework_build: str | None = Field(
        None, description="The framework's build tag where the plugin knows it (cu132 for a CUDA "
                          "13.2 PyTorch wheel); else the local label of framework_version is used.")
    isolated: bool = Field(False, description="True when this is a dedicated virtual environment.")
    packages: dict[str, str] = Field(
        default_factory=dict, description="Installed package versions (the lock of the environment)."
    )
    requirements: EnvRequirements
    wheelhouse: Wheelhouse
    description: str = Field("", description="One line for the progress display, e.g. current interpreter.")


class DatasetInfo(BaseModel):
    """Where the case's dataset is, in its real on-disk format (returned by ``prepare_data``)."""

    kind: str = Field(description="Dataset kind (CaseSpec.dataset), e.g. gpt-npy.")
    path: str = Field(description="Folder that holds the dataset files.")
    files: list[str] = Field(default_factory=list, description="File names inside path the training reads.")
    synthesized: bool = Field(description="True when harness generated the data offline.")
    seed: int | None = Field(None, description="Seed the synthetic data was generated from.")
    description: str = Field("", description="One line for the progress display and the result.")


class LaunchSpec(BaseModel):
    """How to start the training processes (returned by ``run``); the core executes it."""

    argv: list[str] = Field(description="Command as an argument list; never a shell string.")
    env: dict[str, str] = Field(default_factory=dict, description="Variables added to the environment.")
    cwd: str | None = Field(None, description="Working folder of the processes; None keeps the current one.")
    nproc: int = Field(1, description="Processes per node the launch starts.")
    nnodes: int = Field(1, description="Nodes the launch spans.")
    log_format: str = Field(
        description="Name of the registered log format the output is in; the core reads the log "
                    "and shows live progress with it."
    )
    description: str = Field("", description="One line for the progress display, e.g. torch 2.11.")
    scripts: list[str] = Field(
        default_factory=list,
        description="The training script files the launch runs (entry script and the modules it "
                    "imports); the result records each one's sha256.",
    )
    inherit_env: bool = Field(
        True, description="Whether the processes inherit harness's own environment under env. "
                          "The core's launch of a built-in script sets False: env is then the "
                          "whole environment, as the core assembled and recorded it.")


class ProcessOutcome(BaseModel):
    """What executing a launch produced (returned by ``execute``)."""

    status: RunStatus = Field(description="How the processes ended.")
    exit_code: int | None = Field(None, description="Exit status of the launch; None when it was stopped.")
    reason: str | None = Field(None, description="Why it did not succeed: the last error lines, a timeout...")
    log_path: str = Field(description="The log the output was written to.")
    started_at: datetime = Field(description="When the processes started (UTC).")
    finished_at: datetime = Field(description="When the processes ended (UTC).")
    extras: dict[str, Any] = Field(
        default_factory=dict,
        description="Measurements added by wrappers of execute, e.g. a vendor's device monitor.",
    )

    @property
    def duration_s(self) -> float:
        """Seconds from start to end."""
        return (self.finished_at - self.started_at).total_seconds()
