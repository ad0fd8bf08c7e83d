"""The vendor's device backend, as the training scripts read it from the resolved config.

harness writes the vendor's ``DeviceBackend`` into the resolved config (``config.json``, key
``device``): the device type, each framework's entry (its device type, modules to import,
collective backend), whether each process has a device of its own, the precisions and how peak
memory is read. Each framework's start-up reads its own entry from it. Standard library only:
every framework's interpreter imports it.
"""

from __future__ import annotations

import json
import os
import sys


def read_device_backend(config_path: str) -> dict:
    """The device backend of the resolved config at ``config_path``; exits 2 with a one-line
    error when it names none (the vendor declares no backend)."""
    with open(config_path, encoding="utf-8") as handle:
        backend = json.load(handle).get("device")
    if not backend:
        print("error: the resolved config names no device backend (the vendor declares none)", flush=True)
        sys.exit(2)
    return backend


def collective_timeout_s(config_path: str) -> float:
    """How long a rank waits in one collective before its process group gives up: the run's
    ``rendezvous_timeout_s`` (not the framework's default of 10 to 30 minutes), so that ranks
    whose peers are gone end even when nothing else stops them."""
    with open(config_path, encoding="utf-8") as handle:
        return float(json.load(handle)["settings"]["rendezvous_timeout_s"])


def bound_collectives() -> None:
    """NCCL's watchdog ends a rank whose collective timed out (instead of leaving it blocked);
    set before the process group starts."""
    os.environ.setdefault("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1")
