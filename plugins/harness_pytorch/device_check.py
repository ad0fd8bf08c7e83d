"""Before launch: can torch in the run's interpreter use the device the vendor's backend names?

The training scripts check the same at start-up (``scripts/torch_setup.py``); checking here
turns a vendor backend that names a device type torch cannot load into a one-line error
(exit 2) before any data is prepared or process started.
"""

from __future__ import annotations

import subprocess
from importlib import util

from harness.errors import UnavailableError, UserInputError
from harness.models.device import DeviceBackend, FrameworkDevice

#: Device types every torch build has a module for (torch.cpu, torch.cuda): no probe needed.
ALWAYS_PRESENT = frozenset({"cpu", "cuda"})

# Run in the run's interpreter: import the backend's modules, then ask torch for the device
# type's module; the exit code says which step failed.
_PROBE = """
import importlib, sys
device_type, modules = sys.argv[1], sys.argv[2:]
for name in modules:
    try:
        importlib.import_module(name)
    except Exception as exc:
        print(f"{name}: {exc}")
        sys.exit(3)
import torch
try:
    torch.get_device_module(device_type)
except Exception:
    sys.exit(4)
"""


def torch_device(vendor: str, backend: DeviceBackend | None) -> FrameworkDevice:
    """The backend's torch entry, or an UnavailableError saying the vendor has none."""
    entry = backend.for_framework("torch") if backend else None
    if entry is None:
        raise UnavailableError(
            f"vendor {vendor!r} declares no torch device in its device backend "
            f"(VendorSpec.backend.frameworks['torch']), so PyTorch cannot run on its devices"
        )
    return entry


def check_torch_device(python: str, vendor: str, backend: DeviceBackend | None) -> None:
    """Raise a one-line error when torch in ``python`` cannot load the device type: an
    UnavailableError when the vendor declares no torch device, else a UserInputError."""
    entry = torch_device(vendor, backend)
    device_type = entry.device_type
    hint = entry.import_modules[0] if entry.import_modules else f"torch_{device_type}"
    missing = [m for m in entry.import_modules if util.find_spec(m.split(".")[0]) is None]
    if missing:  # cheap and certain in this interpreter; the probe below covers the others
        raise UserInputError(f"torch has no device type {device_type!r}; is {missing[0]} installed?")
    if device_type in ALWAYS_PRESENT and not entry.import_modules:
        return
    probe = subprocess.run([python, "-c", _PROBE, device_type, *entry.import_modules],
                           capture_output=True, text=True, timeout=300)
    if probe.returncode == 3:
        raise UserInputError(f"torch device type {device_type!r} needs "
                             f"{probe.stdout.strip() or hint}; is {hint} installed?")
    if probe.returncode != 0:
        raise UserInputError(f"torch has no device type {device_type!r}; is {hint} installed?")
