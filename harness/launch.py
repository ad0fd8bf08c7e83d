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
