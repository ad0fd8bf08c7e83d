"""Checking a training script's read-back line against what harness resolved.

Every built-in training script prints, before its first step, one line
``[harness-readback] {json}`` with what it actually built and will run (the line's format and
its printing helper are in the case catalog's neutral ``shared_scripts/readback.py``, which
the scripts import in their own interpreters; harness itself is not installed there, so the
prefix is repeated here and a test keeps the two equal).

A plugin that changes what runs behind harness's back (a ``run`` wrapper that rewrites the
config file the script reads, or its argument list) cannot make the script print the resolved
config: the read-back differs, and the run is ``invalid`` with the differing keys as the
reason. The comparison needs no knowledge of frameworks or models: the read-back uses the
config's own key names, and every key it shares with the config is compared with it.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.models import ResolvedConfig
from harness.models.device import DeviceBackend

#: Must equal ``shared_scripts/readback.py``'s READBACK_PREFIX (tests check).
READBACK_PREFIX = "[harness-readback] "
#: The variable that hands a repeat its data-order nonce; must equal
#: ``shared_scripts/data_nonce.py``'s NONCE_ENV (tests check). The read-back reports the
#: nonce as ``data_nonce``.
DATA_NONCE_ENV = "HARNESS_DATA_NONCE"

#: Keys every read-back must carry, besides the case's identifying (immutable) parameters.
REQUIRED_KEYS: tuple[str, ...] = (
    "parameters", "micro_batch_size", "grad_accum_steps", "global_batch_size", "precision",
    "learning_rate", "world_size", "device_type",
)

#: Floats (learning rates) may pass through a framework's float32 before they are printed.
_FLOAT_REL_TOL = 1e-6


@dataclass
class ReadbackCheck:
    """What a log's read-back said and how it differs from the resolved config."""

    readback: dict[str, Any] | None
    differences: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # key -> (read, expected)
    missing: list[str] = field(default_factory=list)
    problem: str | None = None  # no line, or a line that is not a JSON object

    @property
    def ok(self) -> bool:
        return self.problem is None and not self.differences and not self.missing

    def reason(self) -> str | None:
        """One line for ``failure_reason``: the differing keys with both values."""
        if self.problem:
            return self.problem
        parts = [f"{key} {read!r} (expected {want!r})" for key, (read, want) in self.differences.items()]
        if self.missing:
            parts.append("missing " + ", ".join(self.missing))
        if not parts:
            return None
        return "the training script's read-back differs from the resolved config: " + "; ".join(parts)


def find_readback(log_path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The first read-back object in a log (launchers may prefix lines, e.g. ``[1,0]<stdout>:``),
    or None with the reason."""
    try:
        with open(log_path, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                at = line.find(READBACK_PREFIX)
                if at < 0:
                    continue
                try:
                    data = json.loads(line[at + len(READBACK_PREFIX):])
                except json.JSONDecodeError:
                    return None, "the training script's read-back line is not valid JSON"
                if not isinstance(data, dict):
                    return None, "the training script's read-back line is not a JSON object"
                return data, None
    except OSError as exc:
        return None, f"the log could not be read for the read-back line: {exc}"
    return None, "the training script printed no read-back line (what it built and will run)"


def expected_values(config: ResolvedConfig, *, model_parameters: int | None,
                    device_kind: str) -> dict[str, Any]:
    """What a faithful read-back says for ``config``.

    The global batch counts data replicas only: tensor- and pipeline-parallel ranks of one
    replica share its batch (``tensor_parallel_degree`` x ``pipeline_parallel_degree`` ranks
    per replica where the case has those parameters).
    """
    settings = config.settings.model_dump()
    expected: dict[str, Any] = {**settings, **config.params, "model": config.model}
    per_replica = 1
    for key in ("tensor_parallel_degree", "pipeline_parallel_degree"):
        value = config.params.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 1:
            per_replica *= value
    replicas = max(1, config.settings.world_size // per_replica)
    expected["global_batch_size"] = (config.settings.micro_batch_size
                                     * config.settings.grad_accum_steps * replicas)
    if model_parameters is not None:
        expected["parameters"] = model_parameters
    expected["device_type"] = device_kind
    return expected


def _same(read: Any, want: Any) -> bool:
    if isinstance(want, bool) or isinstance(read, bool):
        return isinstance(read, bool) and isinstance(want, bool) and read == want
    if isinstance(want, (int, float)) and isinstance(read, (int, float)):
        if isinstance(want, int) and isinstance(read, int):
            return read == want
        return math.isclose(float(read), float(want), rel_tol=_FLOAT_REL_TOL)
    return read == want


def _same_device(read: Any, device_kind: str, backend: DeviceBackend | None = None) -> bool:
    """The run must train on the device the vendor's backend declares: one of its frameworks'
    device type strings (``cuda``, ``gpu``, ``npu``; ``gpu:0`` counts as ``gpu``). Without a
    backend, a CPU run must train on the framework's CPU device and an accelerator run not."""
    if not isinstance(read, str):
        return False
    read_type = read.split(":")[0].lower()
    if backend is not None:
        return read_type in {entry.device_type.lower() for entry in backend.frameworks.values()}
    return (read_type == "cpu") == (device_kind == "cpu")


def compare_readback(readback: dict[str, Any], config: ResolvedConfig, *,
                     model_parameters: int | None, device_kind: str,
                     identifying: frozenset[str] | set[str] = frozenset(),
                     data_nonce: int | None = None) -> ReadbackCheck:
    """Compare a read-back with the resolved config: every key both have must agree;
    ``REQUIRED_KEYS`` and the case's ``identifying`` parameters (its immutable keys) must be
    present. ``parameters`` is compared when the case's count is known; ``data_nonce``, the
    repeat's data-order nonce, must be read back when the core gave one (a log of another
    run names another)."""
    expected = expected_values(config, model_parameters=model_parameters, device_kind=device_kind)
    if data_nonce is not None:
        expected["data_nonce"] = data_nonce
    differences: dict[str, tuple[Any, Any]] = {}
    for key, read in readback.items():
        if key not in expected:
            continue  # extra facts (framework version, layout details) are recorded only
        want = expected[key]
        same = _same_device(read, want, config.device) if key == "device_type" else _same(read, want)
        if not same:
            differences[key] = (read, want)
    required = set(REQUIRED_KEYS) | (set(identifying) & set(config.params))
    if data_nonce is not None:
        required.add("data_nonce")
    missing = sorted(required - set(readback))
    return ReadbackCheck(readback=readback, differences=dict(sorted(differences.items())),
                         missing=missing)


def check_log(log_path: Path, config: ResolvedConfig, *, model_parameters: int | None,
              device_kind: str, identifying: frozenset[str] | set[str] = frozenset(),
              required: bool = True, data_nonce: int | None = None) -> ReadbackCheck:
    """Find and compare the read-back of one log. Without a line the check fails when
    ``required`` (built-in frameworks print one), else it passes with nothing read back."""
    readback, problem = find_readback(log_path)
    if readback is None:
        return ReadbackCheck(readback=None, problem=problem if required else None)
    return compare_readback(readback, config, model_parameters=model_parameters,
                            device_kind=device_kind, identifying=identifying, data_nonce=data_nonce)
