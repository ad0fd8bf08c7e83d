"""The system description of a certification, collected automatically and schema-checked.

Accelerators come from the vendor's device discovery as recorded in the results; host,
OS and Python from this process; framework and library versions from the results'
environment fingerprints; plugins from the plugin manager; the harness version and the git
commit of its source tree when it is a checkout. Required fields are required by the
model: a description missing one does not validate, and the ``system`` check fails.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from harness import __version__
from harness.certify.checks import Check, failed, passed
from harness.fingerprint import cpu_model, harness_git_sha
from harness.errors import first_validation_error

if TYPE_CHECKING:
    from harness.app import Harness

    from harness.models import BenchmarkResult


class Accelerator(BaseModel):
    vendor: str
    kind: str = Field(description="cpu, gpu, npu, ...")
    model: str
    count: int = Field(ge=1)
    memory_bytes: int | None = Field(description="Memory of one device (None: not reported).")
    driver: str | None = Field(description="Driver version (None for the host CPU).")
    runtime: str | None = None
    interconnect: str | None = Field(description="NVLink/PCIe/...; None for a single host CPU.")


class Host(BaseModel):
    cpu: str
    cores: int = Field(ge=1)
    memory_bytes: int = Field(ge=1)
    os: str
    kernel: str
    python: str
    hostname_hash: str = Field(description="sha256 prefix of the host name (not the name).")


class PluginEntry(BaseModel):
    name: str
    version: str
    source: str


class SystemDescription(BaseModel):
    accelerators: list[Accelerator] = Field(min_length=1)
    host: Host
    frameworks: dict[str, str] = Field(min_length=1, description="framework -> version.")
    libraries: dict[str, str] = Field(default_factory=dict)
    plugins: list[PluginEntry] = Field(min_length=1)
    harness_version: str
    harness_git_sha: str | None = Field(
        description="Commit of the harness checkout, '-dirty' with uncommitted changes; None outside a checkout.")
    provenance: list[dict[str, Any]] = Field(
        default_factory=list, description="Per-run provenance (plugins, hooks, script hashes) when results carry it.")


def _memory_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text(encoding="utf-8").splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def collect(harness: Harness, results: list[BenchmarkResult]) -> dict[str, Any]:
    """The description as a plain dict (validated separately, so a gap is a failed check
    in the report rather than a crash)."""
    import hashlib

    accelerators: dict[tuple, dict[str, Any]] = {}
    frameworks: dict[str, str] = {}
    libraries: dict[str, str] = {}
    provenance = []
    for result in results:
        devices = result.devices
        if devices is not None and devices.devices:
            first = devices.devices[0]
            key = (devices.vendor, first.name)
            accelerators[key] = {
                "vendor": devices.vendor, "kind": devices.kind, "model": first.name,
                "count": max(devices.count, accelerators.get(key, {}).get("count", 0)),
                "memory_bytes": first.memory_bytes, "driver": devices.driver_version,
                "runtime": devices.runtime_version, "interconnect": devices.interconnect,
            }
        if result.framework_version:
            frameworks[result.framework] = result.framework_version
        libraries.update(result.environment.packages)
        if result.provenance is not None:
            provenance.append({"run_id": result.run_id, **result.provenance.model_dump()})
    infos = harness.plugins
    return {
        "accelerators": list(accelerators.values()),
        "host": {
            "cpu": cpu_model(), "cores": os.cpu_count(), "memory_bytes": _memory_bytes(),
            "os": _os_name(), "kernel": platform.release(), "python": platform.python_version(),
            "hostname_hash": hashlib.sha256(platform.node().encode()).hexdigest()[:12],
        },
        "frameworks": frameworks,
        "libraries": dict(sorted(libraries.items())),
        "plugins": [{"name": i.name, "version": i.version, "source": i.source} for i in infos.values()],
        "harness_version": __version__,
        "harness_git_sha": harness_git_sha(),
        "provenance": provenance,
    }


def check_system(description: dict[str, Any]) -> Check:
    try:
        model = SystemDescription.model_validate(description)
    except ValidationError as exc:
        where, message, _ = first_validation_error(exc)
        return failed("system", f"system description invalid at {where}: {message}")
    accel = model.accelerators[0]
    return passed("system", f"{accel.count} x {accel.model} ({accel.vendor}), {model.host.cpu}, "
                  f"{model.host.os}; {len(model.plugins)} plugins; harness {model.harness_version}")
