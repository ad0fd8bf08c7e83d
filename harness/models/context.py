"""The context every workflow hook receives."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from harness.models.case import CaseSpec
from harness.models.config import ResolvedConfig
from harness.models.device import DeviceSet
from harness.models.memory import MemoryEstimate

#: auto: the framework plugin's environment (maybe an isolated one); current: this interpreter.
EnvMode = Literal["auto", "current"]
#: local: the user starts the same command on every node; slurm: one srun task per node.
Launcher = Literal["local", "slurm"]


class RunContext(BaseModel):
    """Read-only facts about the run in progress."""

    model_config = ConfigDict(frozen=True)

    run_id: str = Field(description="Unique id of the run; also the name of its folder.")
    case: CaseSpec = Field(description="The case being run.")
    config: ResolvedConfig = Field(description="The resolved configuration (settings and params).")
    devices: DeviceSet = Field(description="What discover_devices found for the run's vendor.")
    run_dir: Path = Field(description="Folder of this run's log, config and results.")
    data_dir: Path = Field(description="Root under which datasets are kept.")
    cache_dir: Path = Field(description="Root for cached environments and other reusable state.")
    wheelhouse: Path | None = Field(
        None, description="A local folder of wheels to build isolated environments from, "
                          "offline (--wheelhouse, HARNESS_WHEELHOUSE); None: the package indexes.")
    env_mode: EnvMode = Field(
        "auto", description="'current' asks prepare_env to use the running interpreter."
    )
    vendor_config_path: str | None = Field(
        None, description="The vendor per-case config file that was applied, if any.")
    repeats: int = Field(1, ge=1, description="How many times the run is repeated (--repeat).")
    repeat_index: int = Field(1, ge=1, description="Which repeat (1-based) run, execute and parse_log serve.")
    memory_estimate: MemoryEstimate | None = Field(
        None, description="The memory planner's per-device peak estimate for this config."
    )
    job_id: str | None = Field(
        None, description="Multi-node runs: the id every node of the job shares (its rendezvous id).")
    node_rank: int = Field(0, ge=0, description="Multi-node runs: this node's rank; node 0 records the job's result.")
    rendezvous_endpoint: str | None = Field(
        None, description="Multi-node runs: 'host:port' where the job's processes meet "
                          "(MASTER_ADDR, MASTER_PORT or a port derived from the job id).")
    launcher: Launcher = Field("local", description=(
        "How the nodes were started: 'local' (the same command on every node), 'slurm' (one "
        "srun task per node; identity from Slurm's variables)."))
    # Hook name -> plugin -> "implemented" | "wrapped" for the hook calls that planned this
    # run (set by the planner's HookRouter.carry_plan): the start of the result's provenance.
    # Not data of the run, so not a field.
    _planning_hooks: dict[str, dict[str, str]] = PrivateAttr(default_factory=dict)

    @property
    def framework(self) -> str:
        """The run's framework name (``config.framework``)."""
        return self.config.framework

    @property
    def vendor(self) -> str:
        """The run's vendor name (``config.vendor``)."""
        return self.config.vendor
