"""Launch facts several plugins share: where multi-node processes meet, how many cores a
process may use. Framework-neutral, so framework and vendor plugins import them from here
rather than from one another."""

from __future__ import annotations

import os

from harness.errors import UserInputError

DEFAULT_MASTER_PORT = "29500"


def rendezvous_endpoint() -> str:
    """``MASTER_ADDR:MASTER_PORT``, where the processes of a multi-node run meet.

    The user exports them on every node (the same way torchrun and paddle.distributed.launch
    expect them); the port defaults to 29500, torchrun's.
    """
    addr = os.environ.get("MASTER_ADDR")
    if not addr:
        raise UserInputError("--nnodes > 1 needs MASTER_ADDR (and optionally MASTER_PORT) in the environment")
    return f"{addr}:{os.environ.get('MASTER_PORT', DEFAULT_MASTER_PORT)}"


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity on macOS
        return os.cpu_count() or 1


def torchrun_node_arguments(context) -> list[str]:
    """torchrun's arguments for this run's nodes: ``--standalone`` on one node; on several,
    a rendezvous at ``MASTER_ADDR:MASTER_PORT`` under the job's id with the job's rendezvous
    timeout, and no restarts (a lost rank ends the job on every node instead of waiting for a
    replacement). The static rendezvous, not c10d: c10d numbers nodes in the order they
    join, but node 0 of the harness must hold global rank 0, whose log has the figures."""
    settings = context.config.settings
    if settings.nnodes == 1:
        return ["--standalone"]
    timeout = int(settings.rendezvous_timeout_s)
    return [f"--nnodes={settings.nnodes}", "--rdzv-backend=static",
            f"--rdzv-endpoint={rendezvous_endpoint()}", f"--rdzv-id={context.job_id}",
            f"--rdzv-conf=timeout={timeout}", "--max-restarts=0",
            f"--node-rank={context.node_rank}"]


def job_identity(job_id: str | None, node_rank: int | None, nnodes: int) -> tuple[str | None, int]:
    """The job id and node rank of a multi-node run, from the options or the environment
    (``HARNESS_JOB_ID``, then Slurm's ``SLURM_JOB_ID``; ``NODE_RANK``, then ``SLURM_NODEID``).
    Every node runs the same command, so the id must come from outside: the harness cannot
    invent one that all nodes agree on."""
    if nnodes == 1:
        return job_id, 0
    job_id = job_id or os.environ.get("HARNESS_JOB_ID") or os.environ.get("SLURM_JOB_ID")
    if not job_id:
        raise UserInputError("--nnodes > 1 needs a job id that every node shares: --job-id NAME "
                             "(or HARNESS_JOB_ID; under Slurm SLURM_JOB_ID is used)")
    if not all(c.isalnum() or c in "-_." for c in job_id):
        raise UserInputError(f"--job-id {job_id!r}: use letters, digits, '-', '_' and '.' only")
    if node_rank is None:
        text = os.environ.get("NODE_RANK") or os.environ.get("SLURM_NODEID")
        if text is None or not text.isdigit():
            raise UserInputError("--nnodes > 1 needs this node's rank: --node-rank N (or NODE_RANK; "
                                 "under Slurm SLURM_NODEID is used)")
        node_rank = int(text)
    if not 0 <= node_rank < nnodes:
        raise UserInputError(f"--node-rank {node_rank} is out of range for --nnodes {nnodes} "
                             f"(0 to {nnodes - 1})")
    rendezvous_endpoint()  # MASTER_ADDR must be set
    return job_id, node_rank
