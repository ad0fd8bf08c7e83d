"""Resolve sweep points against the plugins: what runs, what is skipped and why, what is done.

Nothing is executed here. A point is

- ``skipped`` when this machine cannot run it (more processes than devices, several nodes
  without a rendezvous address, a precision a plugin says the device or framework lacks, a
  framework or case no installed plugin provides);
- ``done`` when the results database already holds a successful run with the same
  resolved-config hash and at least as many repeats (this makes a sweep resumable);
- ``invalid`` when its settings are wrong for the case (an unknown ``set`` key, ...);
- ``todo`` otherwise.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from harness.config_resolution import SWEEP_SOURCE
from harness.dispatch import HookRouter
from harness.errors import HarnessError, UnavailableError, UserInputError
from harness.runner.pipeline import RunRequest, plan
from harness.store import ResultStore, run_folder_damage
from harness.sweep.spec import SweepPoint

if TYPE_CHECKING:
    from harness.app import Harness

    from harness.models import BenchmarkResult, DeviceSet
    from harness.models.context import RunContext

PlanState = Literal["todo", "skipped", "done", "invalid"]


@dataclass
class SweepOptions:
    """How every run of a sweep is executed (the ``harness run`` options they share)."""

    output: Path = Path("results")
    data_dir: Path | None = None
    cache_dir: Path | None = None
    wheelhouse: Path | None = None
    env_mode: Literal["auto", "current"] = "auto"
    rerun: bool = False
    # Where the points come from: the sweep file's name (None: the command line alone), the
    # point fields and ``set`` keys the command line laid over the file's (still ``cli``).
    sweep_file: str | None = None
    cli_fields: frozenset[str] = frozenset()
    cli_set_keys: frozenset[str] = frozenset()


#: Point fields -> the config key each one sets.
_FIELD_KEYS = {"micro_batch_size": "micro_batch_size", "precision": "precision",
               "max_steps": "max_steps", "nproc": "nproc", "nnodes": "nnodes"}


def sweep_origins(point: SweepPoint, options: SweepOptions) -> dict[str, str]:
    """The config keys of ``point`` whose value the sweep file set, labelled
    ``sweep:<file name>`` (``RunRequest.origins``), so a result names the file, not the
    command line. ``set`` values win over fields, as in config resolution."""
    if options.sweep_file is None:
        return {}
    from_file: dict[str, bool] = {}
    for name, key in _FIELD_KEYS.items():
        if getattr(point, name) is not None:
            from_file[key] = name not in options.cli_fields
        elif name in ("nproc", "nnodes"):  # the case string's layout, when the point gives none
            from_file[key] = "case" not in options.cli_fields
    for key, _ in point.set:
        from_file[key] = key not in options.cli_set_keys
    label = SWEEP_SOURCE + options.sweep_file
    return {key: label for key, file in from_file.items() if file}


@dataclass
class PlannedRun:
    index: int
    point: SweepPoint
    state: PlanState
    reason: str | None = None
    request: RunRequest | None = None
    context: RunContext | None = None
    recorded: BenchmarkResult | None = None
    repeat: int = 1


@dataclass
class _DeviceCache:
    router: HookRouter
    found: dict[str, DeviceSet | str] = field(default_factory=dict)

    def get(self, vendor: str) -> DeviceSet | str:
        """The vendor's devices, or the reason they are unavailable."""
        if vendor not in self.found:
            try:
                self.found[vendor] = self.router.discover_devices(vendor)
            except HarnessError as exc:
                self.found[vendor] = str(exc)
        return self.found[vendor]


def default_repeat(devices: DeviceSet, scale: str) -> int:
    """Repeats when neither the command line nor the sweep file says: accelerators at full
    scale vary from run to run (clocks, thermals), so 3; CPU and smoke runs 1."""
    return 3 if devices.kind != "cpu" and scale == "full" else 1


def plan_sweep(harness: Harness, points: list[SweepPoint],
               options: SweepOptions) -> list[PlannedRun]:
    store = ResultStore(options.output)
    devices = _DeviceCache(harness.router())
    return [_plan_point(harness, store, devices, index, point, options)
            for index, point in enumerate(points, start=1)]


def _plan_point(harness: Harness, store: ResultStore, device_cache: _DeviceCache, index: int,
                point: SweepPoint, options: SweepOptions) -> PlannedRun:
    def skipped(reason: str) -> PlannedRun:
        return PlannedRun(index, point, "skipped", reason)

    if not point.case:
        return PlannedRun(index, point, "invalid", "no case given (--case or a 'case' field)")
    registry = harness.registry
    vendor = point.vendor or "cpu"
    if vendor not in registry.vendors:
        return skipped(f"vendor {vendor!r} is not provided by any installed plugin")
    case_name = point.case.split(":", 1)[0]
    if case_name not in registry.cases:
        return skipped(f"case {case_name!r} is not provided by any installed plugin")
    if point.framework and point.framework not in registry.frameworks:
        return skipped(f"framework {point.framework!r} is not installed "
                       f"(installed: {', '.join(registry.frameworks.names()) or 'none'})")
    if point.framework:
        try:
            registry.check_case_framework(registry.cases.get(case_name), point.framework)
        except UserInputError as exc:
            return skipped(str(exc))
    devices = device_cache.get(vendor)
    if isinstance(devices, str):
        return skipped(devices)
    nnodes = point.nnodes or 1
    if nnodes > 1 and not os.environ.get("MASTER_ADDR"):
        return skipped(f"needs {nnodes} nodes: export MASTER_ADDR (and MASTER_PORT) and start "
                       "the same sweep on every node")
    if devices.kind != "cpu" and point.nproc and point.nproc > devices.count:
        return skipped(f"needs {point.nproc} {vendor} devices per node; this machine has "
                       f"{devices.count}")
    scale = point.scale or "full"
    repeat = point.repeat or default_repeat(devices, scale)
    request = RunRequest(
        case=point.case, vendor=vendor, framework=point.framework, scale=scale,
        nproc=point.nproc, nnodes=point.nnodes, micro_batch_size=point.micro_batch_size,
        precision=point.precision, max_steps=point.max_steps, set_pairs=point.set_pairs(),
        repeat=repeat, output=options.output, data_dir=options.data_dir,
        cache_dir=options.cache_dir, wheelhouse=options.wheelhouse, env_mode=options.env_mode,
        hardware_config=point.hardware_config, origins=sweep_origins(point, options),
    )
    try:
        context = plan(harness, request)
    except UnavailableError as exc:
        return skipped(str(exc))
    except UserInputError as exc:
        return PlannedRun(index, point, "invalid", str(exc), request=request)
    repeat = context.repeats  # plan() may take it from a case string
    reasons = harness.router().unsupported_reasons(context)
    if reasons:
        return PlannedRun(index, point, "skipped", "; ".join(reasons), request, context,
                          repeat=repeat)
    note = None
    if not options.rerun:
        recorded = [r for r in store.find_by_config_hash(context.config.config_hash)
                    if len(r.repeats) >= repeat]
        if recorded:
            # a recorded run whose folder was deleted or whose result.json is damaged does not
            # count: the point runs again (and the summary says why)
            dirs = store.run_dirs()
            damage = {r.run_id: run_folder_damage(r, dirs.get(r.run_id)) for r in recorded}
            intact = [r for r in recorded if damage[r.run_id] is None]
            if intact:
                newest = max(intact, key=lambda r: r.started_at)
                return PlannedRun(index, point, "done", f"already recorded as {newest.run_id}",
                                  request, context, newest, repeat)
            newest = max(recorded, key=lambda r: r.started_at)
            note = f"recorded as {newest.run_id}, but {damage[newest.run_id]}: running it again"
    return PlannedRun(index, point, "todo", note, request, context, repeat=repeat)
