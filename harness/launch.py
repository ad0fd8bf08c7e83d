"""Launch facts several plugins share: who the nodes of a job are and where they meet, how
many cores a process may use, what torchrun says about a failed rank. Framework-neutral, so
framework and vendor plugins import them from here rather than from one another."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass

from harness.errors import UserInputError
from harness.names import check_path_name

# A job's ports, when MASTER_PORT is not given, are derived from its id: two jobs on one host
# (or one node in two jobs) then meet at different ports. The range is below Linux's
# ephemeral ports (32768-60999), so a port the kernel hands out for a connection is not
# taken; each job gets two (the rendezvous and, one above it, node 0's node-record exchange).
DERIVED_PORT_BASE, DERIVED_PORT_PAIRS = 20000, 6000


@dataclass(frozen=True)
class JobIdentity:
    """Who this node is in a multi-node job, and where the job's nodes meet."""

    job_id: str | None
    node_rank: int
    nnodes: int | None = None  # from the launcher (Slurm's SLURM_STEP_NUM_NODES); None: --nnodes
    master_addr: str | None = None


def derived_port(job_id: str) -> int:
    """The even port of the job's pair, the same on every node (a hash of the job id)."""
    digest = int(hashlib.sha256(job_id.encode()).hexdigest()[:8], 16)
    return DERIVED_PORT_BASE + 2 * (digest % DERIVED_PORT_PAIRS)


def rendezvous_endpoint(job_id: str, master_addr: str | None = None) -> str:
    """``MASTER_ADDR:MASTER_PORT``, where the processes of a multi-node job meet.

    The user exports ``MASTER_ADDR`` on every node (the way torchrun and
    paddle.distributed.launch expect it; under ``--launcher slurm`` it is the job's first
    node); ``MASTER_PORT`` defaults to a port derived from the job id.
    """
    addr = master_addr or os.environ.get("MASTER_ADDR")
    if not addr:
        raise UserInputError("--nnodes > 1 needs MASTER_ADDR (and optionally MASTER_PORT) in the "
                             "environment, or --launcher slurm inside a Slurm allocation")
    port = os.environ.get("MASTER_PORT") or str(derived_port(job_id))
    if not port.isdigit() or not 0 < int(port) < 65535:
        raise UserInputError(f"MASTER_PORT={port!r} is not a port number (1 to 65534)")
    return f"{addr}:{port}"


def split_endpoint(endpoint: str) -> tuple[str, int]:
    host, _, port = endpoint.rpartition(":")
    return host, int(port)


def usable_cores() -> int:
    """The CPU cores this process may run on (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no sched_getaffinity on macOS
        return os.cpu_count() or 1


def torchrun_node_arguments(context) -> list[str]:
    """torchrun's arguments for this run's nodes: ``--standalone`` on one node; on several,
    a rendezvous at the job's endpoint under the job's id with the job's rendezvous
    timeout, and no restarts (a lost rank ends the job on every node instead of waiting for a
    replacement). The static rendezvous, not c10d: c10d numbers nodes in the order they
    join, but node 0 of the harness must hold global rank 0, whose log has the figures."""
    settings = context.config.settings
    if settings.nnodes == 1:
        return ["--standalone"]
    timeout = int(settings.rendezvous_timeout_s)
    return [f"--nnodes={settings.nnodes}", "--rdzv-backend=static",
            f"--rdzv-endpoint={context.rendezvous_endpoint}", f"--rdzv-id={context.job_id}",
            f"--rdzv-conf=timeout={timeout}", "--max-restarts=0",
            f"--node-rank={context.node_rank}"]


def job_identity(job_id: str | None, node_rank: int | None, nnodes: int) -> JobIdentity:
    """The job id and node rank of a multi-node run, from the options or the environment
    (``HARNESS_JOB_ID``, then Slurm's ``SLURM_JOB_ID``; ``NODE_RANK``, then ``SLURM_NODEID``).
    Every node runs the same command, so the id must come from outside: the harness cannot
    invent one that all nodes agree on."""
    if nnodes == 1:
        return JobIdentity(job_id, 0)
    job_id = job_id or os.environ.get("HARNESS_JOB_ID") or os.environ.get("SLURM_JOB_ID")
    if not job_id:
        raise UserInputError("--nnodes > 1 needs a job id that every node shares: --job-id NAME "
                             "(or HARNESS_JOB_ID; under Slurm SLURM_JOB_ID is used)")
    check_job_id(job_id)
    if node_rank is None:
        text = os.environ.get("NODE_RANK") or os.environ.get("SLURM_NODEID")
        if text is None or not text.isdigit():
            raise UserInputError("--nnodes > 1 needs this node's rank: --node-rank N (or NODE_RANK; "
                                 "under Slurm SLURM_NODEID is used)")
        node_rank = int(text)
    if not 0 <= node_rank < nnodes:
        raise UserInputError(f"--node-rank {node_rank} is out of range for --nnodes {nnodes} "
                             f"(0 to {nnodes - 1})")
    rendezvous_endpoint(job_id)  # MASTER_ADDR must be set
    return JobIdentity(job_id, node_rank)


def check_job_id(job_id: str) -> None:
    check_path_name(job_id, "--job-id")  # the job id names the job's run folders


def slurm_identity(job_id: str | None, node_rank: int | None) -> JobIdentity:
    """``--launcher slurm``: this node's place in the Slurm job step it runs in. The job id is
    ``SLURM_JOB_ID``, the node rank ``SLURM_NODEID``, the node count the step's
    (``SLURM_STEP_NUM_NODES``), and the job's first node (``scontrol show hostnames`` of the
    step's node list) is where the nodes meet. ``harness slurm script`` writes a batch script
    that starts one such step task per node with ``srun``."""
    env = os.environ
    if not env.get("SLURM_JOB_ID"):
        raise UserInputError("--launcher slurm runs inside a Slurm allocation (SLURM_JOB_ID is not "
                             "set): submit the script of `harness slurm script` with sbatch")
    step = env.get("SLURM_STEP_ID", "")
    # srun sets SLURM_STEP_ID; the batch script has none (or one of Slurm's special step ids,
    # 0xfffffffa and above: batch, extern, interactive)
    if not step.isdigit() or int(step) >= 0xFFFFFFFA:
        raise UserInputError("--launcher slurm runs as one srun task per node (this is the batch "
                             "script itself): `srun --ntasks-per-node=1 harness run ... --launcher "
                             "slurm`, as `harness slurm script` writes it")
    if node_rank is not None and str(node_rank) != env.get("SLURM_NODEID"):
        raise UserInputError(f"--node-rank {node_rank} contradicts SLURM_NODEID="
                             f"{env.get('SLURM_NODEID')}; leave --node-rank out under Slurm")
    job_id = job_id or env.get("HARNESS_JOB_ID") or env["SLURM_JOB_ID"]
    check_job_id(job_id)
    tasks_per_node = env.get("SLURM_STEP_TASKS_PER_NODE", "1").split("(")[0]
    if tasks_per_node != "1":
        raise UserInputError(f"--launcher slurm needs one srun task per node, got "
                             f"{tasks_per_node} (srun --ntasks-per-node=1); the processes of a "
                             "node are started by the framework's launcher (--nproc)")
    nnodes = int(env.get("SLURM_STEP_NUM_NODES") or env.get("SLURM_NNODES") or 1)
    nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST") or ""
    return JobIdentity(job_id, int(env.get("SLURM_NODEID", "0")), nnodes,
                       first_slurm_host(nodelist) if nnodes > 1 else None)


def first_slurm_host(nodelist: str) -> str:
    """The first host of a Slurm node list (``node[01-04]`` -> ``node01``), as
    ``scontrol show hostnames`` expands it."""
    scontrol = shutil.which("scontrol")
    if not nodelist or scontrol is None:
        raise UserInputError("--launcher slurm needs SLURM_JOB_NODELIST and scontrol to find the "
                             "job's first node")
    try:
        hosts = subprocess.run([scontrol, "show", "hostnames", nodelist], capture_output=True,
                               text=True, timeout=60, check=True).stdout.split()
    except (OSError, subprocess.SubprocessError) as exc:
        raise UserInputError(f"scontrol show hostnames {nodelist} failed: {exc}") from None
    if not hosts:
        raise UserInputError(f"scontrol show hostnames {nodelist} named no host")
    return hosts[0]


# torchrun's failure summary: "rank : 1 (local_rank: 0)", "exitcode : -9 (pid: 123)".
_TORCHRUN_RANK = re.compile(r"^\s*rank\s*:\s*(\d+) \(local_rank: (\d+)\)")
_TORCHRUN_EXIT = re.compile(r"^\s*exitcode\s*:\s*(-?\d+)")


def exit_description(code: int) -> str:
    """How a process ended, from its exit code (negative: the signal that killed it). The
    kernel's OOM killer sends SIGKILL, and so does little else unasked, hence the guess."""
    if code >= 0:
        return f"exited with code {code}"
    try:
        name = signal.Signals(-code).name
    except ValueError:
        return f"killed by signal {-code}"
    return f"killed by {name}" + (" (out of memory?)" if code == -signal.SIGKILL else "")


def torchrun_failed_ranks(lines: list[str]) -> list[str]:
    """The ranks torchrun's failure summary names in a log, the root cause first: ``rank 1
    (local rank 0): killed by SIGKILL (out of memory?)``, ``rank 0 (local rank 0): killed by
    SIGTERM`` (torchrun stopping the others). Empty when the log has no such summary."""
    failed: list[str] = []
    root_cause: list[str] = []
    in_root_cause = False
    for line in lines:
        if "Root Cause" in line:
            in_root_cause = True
        elif match := _TORCHRUN_RANK.match(line):
            (root_cause if in_root_cause else failed).append(
                f"rank {match.group(1)} (local rank {match.group(2)})")
        elif (match := _TORCHRUN_EXIT.match(line)) and (root_cause or failed):
            current = root_cause if in_root_cause else failed
            current[-1] += f": {exit_description(int(match.group(1)))}"
    failed = root_cause + failed
    return list(dict.fromkeys(failed))
