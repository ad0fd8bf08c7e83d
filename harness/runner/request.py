"""What a run was asked for (RunRequest) and what it produced (RunReport)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from harness.models import BenchmarkResult
from harness.models.context import Launcher


@dataclass
class RunRequest:
    """What the user asked for (the CLI's options, or a sweep's row)."""

    case: str
    vendor: str = "cpu"
    framework: str | None = None
    scale: Literal["full", "smoke"] = "full"
    run_mode: Literal["sp", "mp"] | None = None
    nproc: int | None = None
    nnodes: int | None = None
    micro_batch_size: int | None = None
    precision: str | None = None
    max_steps: int | None = None
    set_pairs: list[str] = field(default_factory=list)
    repeat: int = 1
    output: Path = Path("results")
    data_dir: Path | None = None
    cache_dir: Path | None = None
    wheelhouse: Path | None = None  # else HARNESS_WHEELHOUSE; None: build from the package indexes
    env_mode: Literal["auto", "current"] = "auto"
    hardware_config: str | None = None
    job_id: str | None = None  # multi-node: shared by every node (else HARNESS_JOB_ID, SLURM_JOB_ID)
    node_rank: int | None = None  # multi-node: this node's (else NODE_RANK, SLURM_NODEID)
    launcher: Launcher = "local"  # slurm: one srun task per node, identity from Slurm's variables
    # Config keys whose value this request carries from elsewhere than the command line, and
    # their source label (a sweep file's ``sweep:<file name>``); the others are ``cli``.
    origins: dict[str, str] = field(default_factory=dict)


@dataclass
class RunReport:
    result: BenchmarkResult
    run_dir: Path
    legacy_path: Path
    note: str | None = None  # something the user should know that the result does not say
    # A multi-node job's node other than node 0: its rank and the job (its result is node 0's).
    node_rank: int = 0
    job_id: str | None = None


def utcnow() -> datetime:
    return datetime.now(timezone.utc)
