"""The vendor's device backend, as the training scripts read it from the resolved config.

harness writes the vendor's ``DeviceBackend`` into the resolved config (``config.json``, key
``device``): the device type, each framework's entry (its device type, modules to import,
collective backend), whether each process has a device of its own, the precisions and how peak
memory is read. Each framework's start-up reads its own entry from it. Standard library only:
every framework's interpreter imports it.
"""

from __future__ import annotations

import json
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
