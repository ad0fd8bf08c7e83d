"""The plugin API of harness. Each hook's docstring is its documentation.

A plugin is a module or object with functions decorated ``@hookimpl`` (from ``harness``
``hookimpl = pluggy.HookimplMarker("harness")``, re-exported as ``harness.hookimpl``). Built-in
plugins are listed in ``harness.plugin_manager.DEFAULT_PLUGINS``; third-party packages
register a module under the ``harness`` entry-point group::

    [project.entry-points.harness]
    my_chip = "harness_my_chip.plugin"

Data flows one way through the workflow hooks, in this order, once per repeat::

    discover_devices -> prepare_env -> prepare_data -> run -> execute -> parse_log

The workflow hooks are ``firstresult``: a plugin answers for the framework or vendor it
owns and returns ``None`` for everything else. Vendors change the framework's work by
wrapping hooks (``@hookimpl(wrapper=True)``), e.g. adding visible-devices variables to the
launch returned by ``run`` or sampling device counters around ``execute``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

import pluggy

if TYPE_CHECKING:  # imported for annotations only: keeps `harness --help` fast
    import typer

    from harness.logformat import LogFormat
    from harness.models import (
        CaseSpec,
        DatasetInfo,
        DeviceSet,
        ExecutionEnv,
        FlopsEstimate,
        FrameworkSpec,
        LaunchSpec,
        ParsedLog,
        ProcessOutcome,
        VendorSpec,
    )
    from harness.models.context import RunContext
    from harness.runner.pipeline import RunObserver
    from harness.models.vendor_config import VendorCaseConfig

hookspec = pluggy.HookspecMarker("harness")


# --------------------------------------------------------------------------- registration


@hookspec
def register_cases(register: Callable[[CaseSpec], None]) -> None:
    """Register benchmark cases by calling ``register(CaseSpec(...))`` for each.

    A case is data: model family, dataset kind, default settings and hyper-parameters, a
    ``smoke`` preset, the keys that identify it (``immutable``) and the keys vendors may
    tune (``vendor_overridable``). Two plugins registering one name is an error.
    """


@hookspec
def register_frameworks(register: Callable[[FrameworkSpec], None]) -> None:
    """Register training frameworks by calling ``register(FrameworkSpec(...))``.

    ``models`` lists the model families the framework implements; every case of those
    models becomes runnable with ``--framework <name>``.
    """


@hookspec
def register_vendors(register: Callable[[VendorSpec], None]) -> None:
    """Register hardware vendors by calling ``register(VendorSpec(...))``."""


@hookspec
def register_log_formats(register: Callable[[LogFormat], None]) -> None:
    """Register log formats (``harness.logformat.LogFormat`` instances).

    Framework plugins contribute the formats of their ecosystem; ``harness parse`` and the
    live progress display use them.
    """


@hookspec
def register_commands(cli: typer.Typer) -> None:
    """Add commands or command groups to the ``harness`` CLI (a ``typer.Typer``)."""


# --------------------------------------------------------------------------- vendor


@hookspec(firstresult=True)
def discover_devices(vendor: str) -> DeviceSet | None:
    """Return the devices of ``vendor`` on this machine, or ``None`` if not your vendor.

    Raise ``harness.errors.UnavailableError`` with a one-line explanation and a suggestion
    when the vendor is yours but its devices or driver are missing.
    """


@hookspec(firstresult=True)
def vendor_case_config(
    vendor: str, case: CaseSpec, framework: str, nproc: int, nnodes: int,
    hardware_config: str | None,
) -> VendorCaseConfig | None:
    """Return the vendor's per-case config for this case/framework/layout, or ``None``.

    ``hardware_config`` names a config explicitly (e.g. ``config_TP2PP1SH1SP4A10080Gx1x8``);
    when it is ``None`` pick the one that matches ``nnodes``/``nproc``, if any.
    ``harness.vendor_configs.find_vendor_config`` implements the usual folder layout.

    Its values override the case defaults (only keys the case lists in
    ``vendor_overridable``) and are in turn overridden by ``--set`` on the command line.
    """


@hookspec(firstresult=True)
def device_peak_flops(devices: DeviceSet, precision: str) -> float | None:
    """Return the dense peak FLOP/s of ONE of ``devices`` at ``precision``, or ``None``.

    Answer only when ``devices.vendor`` is yours. ``precision`` is the run's (``fp32``,
    ``fp16``, ``bf16``, ...); answer ``None`` for a device or precision your reviewed table
    does not know, and the result then carries no MFU rather than a guessed one. The core
    computes MFU = model FLOP/s per device (``model_flops``) / this peak.
    """


# --------------------------------------------------------------------------- model


@hookspec(firstresult=True)
def model_flops(context: RunContext) -> FlopsEstimate | None:
    """Return the training FLOPs per unit of throughput of ``context``'s model, or ``None``.

    The unit is that of ``context.case.unit`` (FLOPs per token for ``tokens/s``, per sample
    for ``samples/s``), counted from the resolved ``context.config.params`` with a named
    formula (``FlopsEstimate.formula``), e.g. GPT: 6·N + 12·L·h·s (PaLM, appendix B).
    Answer for the model families (``context.case.model``) you know; case or framework
    plugins may answer. The core combines it with ``device_peak_flops`` into MFU.
    """


# --------------------------------------------------------------------------- workflow


@hookspec(firstresult=True)
def prepare_env(context: RunContext) -> ExecutionEnv | None:
    """Return the environment the run executes in: interpreter, variables, framework version.

    Answer for ``context.framework`` only. The core's fallback (``trylast``) is the running
    interpreter; a plugin may instead create or reuse an isolated virtual environment.
    ``context.env_mode == "current"`` asks for the running interpreter.
    """


@hookspec(firstresult=True)
def prepare_data(context: RunContext) -> DatasetInfo | None:
    """Make sure the case's dataset (``context.case.dataset``) exists and say where it is.

    The data must be in the real on-disk format the training scripts read. Offline, it is
    synthesised in that same format, deterministically from ``context.config.settings.seed``.
    """


@hookspec(firstresult=True)
def run(context: RunContext, env: ExecutionEnv, dataset: DatasetInfo) -> LaunchSpec | None:
    """Return the launch of the training processes: argv list, env, process count.

    The core executes it (see ``execute``); plugins never start processes here. Vendors wrap
    this hook to add variables such as ``CUDA_VISIBLE_DEVICES`` to the returned launch.
    """


@hookspec(firstresult=True)
def execute(
    context: RunContext, launch: LaunchSpec, log_path: Path, observer: RunObserver
) -> ProcessOutcome | None:
    """Execute ``launch``, write its output to ``log_path`` and return the outcome.

    ``observer.on_line(line)`` must receive every (scrubbed) output line: it drives the
    live progress display.

    The core implements it (``trylast``): new process group, scrubbed log, progress, overall
    and no-output timeouts, Ctrl-C handling. Vendors wrap it (``wrapper=True``) to monitor
    their devices while the processes run and add measurements to ``outcome.extras``.
    A vendor that measures power puts the mean power of all devices together, in watts,
    while they were busy training, under ``outcome.extras["busy_power_w"]``; the core turns it
    into energy per token/sample (``result.efficiency.energy_per_unit_j``).
    """


@hookspec
def unsupported_reason(context: RunContext) -> str | None:
    """Say why this planned run cannot run on this machine, or return ``None``.

    ``harness sweep`` asks every plugin before it runs a point of its matrix and lists the
    point as skipped with the reasons given, instead of running it to a failure: e.g. a
    precision the device lacks (bf16 on a pre-Ampere GPU) or the framework has no kernels
    for on this device. Answer only for your own framework or vendor. Not ``firstresult``:
    every plugin's reason is reported.
    """


@hookspec(firstresult=True)
def parse_log(context: RunContext, log_path: Path) -> ParsedLog | None:
    """Turn the framework's own log lines into per-step metrics (``ParsedLog``).

    Answer for ``context.framework`` only. Step throughput is in ``context.case.unit``.
    """
