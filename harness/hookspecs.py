"""The plugin API of harness. Each hook's docstring is its documentation.

A plugin is a module or object with functions decorated ``@hookimpl`` (from ``harness``
``hookimpl = pluggy.HookimplMarker("harness")``, re-exported as ``harness.hookimpl``). Built-in
plugins are listed in ``harness.plugin_manager.DEFAULT_PLUGINS``; third-party packages
register a module under the ``harness`` entry-point group::

    [project.entry-points.harness]
    my_chip = "harness_my_chip.plugin"

Data flows one way through the workflow hooks. ``harness run`` calls them in this order:
the first four once per run, the last three once per repeat (``--repeat N``)::

    discover_devices -> vendor_case_config -> prepare_env -> prepare_data
        -> (run -> execute -> parse_log) x N

then ``model_flops`` and ``device_peak_flops`` once for the efficiency (MFU). Before any of
the workflow hooks, ``harness run``, ``harness sweep`` (for each point) and ``harness certify``
ask ``unsupported_reason``; a reason given ends the run, or skips the point, before anything
is launched.

Who is called. The registration hooks go to every plugin. A workflow hook goes only to the
plugins that own what it is about, which the core learns from the registrations:

- a framework's hooks (``prepare_env``, ``run``, ``parse_log``, ``unsupported_reason``,
  ``matmul_probe``) only to the plugin that registered that framework;
- a vendor's hooks (``discover_devices``, ``vendor_case_config``, ``device_peak_flops``,
  wrappers of ``run`` and ``execute``, ``unsupported_reason``) only to the plugin that
  registered that vendor;
- ``prepare_data`` to the plugins that registered the case or another case of the same
  dataset kind, and ``model_flops`` only to the plugin that registered the case and the
  built-in plugins that own its model family (so a plugin adding a GPT case reuses the GPT
  data and FLOPs formula of the built-in GPT cases, but no plugin answers for a case it did
  not register);
- the core's own fallbacks (``harness.builtin.*``, ``trylast``) always.

So an implementation needs no ``if context.framework != ...: return None`` guard, and a
plugin cannot answer for a framework, vendor or case it did not register. A plugin that
registers a case, framework or vendor name that is already taken is skipped for that name
with a one-line warning naming both plugins' distributions; ``harness plugins`` shows it.
The built-in plugins' names always win, whatever ``tryfirst``/``trylast`` a registration
hook carries.

Most workflow hooks are ``firstresult``: the first non-``None`` answer wins. Vendors change
the framework's work by wrapping hooks (``@hookimpl(wrapper=True)``), e.g. adding
visible-devices variables to the launch returned by ``run`` or sampling device counters
around ``execute``. ``docs/plugins.md`` is the guide; its reference part is generated from
these docstrings (``python -m harness.plugin_docs``).
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
        MatmulRate,
        ParsedLog,
        ProcessOutcome,
        VendorSpec,
    )
    from harness.models.context import RunContext
    from harness.runner.observer import RunObserver
    from harness.models.memory import MemoryPlan
    from harness.models.vendor_config import VendorCaseConfig

hookspec = pluggy.HookspecMarker("harness")


# --------------------------------------------------------------------------- registration


@hookspec
def register_cases(register: Callable[[CaseSpec], None]) -> None:
    """Register benchmark cases by calling ``register(CaseSpec(...))`` for each.

    A case is data: model family, dataset kind, default settings and hyper-parameters, a
    ``smoke`` preset, the keys that identify it (``immutable``) and the keys vendors may
    tune (``vendor_overridable``). A name that is already registered is skipped with a warning.

    Example::

        @hookimpl
        def register_cases(register):
            register(CaseSpec(
                name="mlp_tiny", model="mlp", dataset="mlp-rows", unit="samples/s",
                mission_name="mlp_tiny", direction_id=2, legacy_prefix="rec",
                settings={"micro_batch_size": 64, "max_steps": 50, "skip_steps": 5},
                params={"num_layers": 4, "hidden_size": 256, "learning_rate": 1e-3},
                smoke={"max_steps": 10},
                immutable=frozenset({"num_layers", "hidden_size"}),
                vendor_overridable=frozenset({"micro_batch_size", "precision"}),
            ))
    """


@hookspec
def register_frameworks(register: Callable[[FrameworkSpec], None]) -> None:
    """Register training frameworks by calling ``register(FrameworkSpec(...))``.

    ``models`` lists the model families the framework implements; every case of those
    models becomes runnable with ``--framework <name>``, unless the case asks for a
    model-parallel layout (``tensor_parallel_degree`` or ``pipeline_parallel_degree`` above
    1) the framework does not list in ``model_parallel`` (default: data parallel only):
    `harness list cases` then leaves the framework out and a run says why. Registering a
    framework makes this plugin the one the framework's workflow hooks are called on.

    Example::

        @hookimpl
        def register_frameworks(register):
            register(FrameworkSpec(name="myfw", description="MyFW 2.0, one process per device",
                                   models=frozenset({"mlp"}), log_format="myfw"))
    """


@hookspec
def register_vendors(register: Callable[[VendorSpec], None]) -> None:
    """Register hardware vendors by calling ``register(VendorSpec(...))``.

    Registering a vendor makes this plugin the one the vendor's hooks are called on
    (``discover_devices``, ``vendor_case_config``, ``device_peak_flops`` and the wrappers of
    ``run`` and ``execute``) when a run names it with ``--vendor``.

    Example::

        @hookimpl
        def register_vendors(register):
            register(VendorSpec(name="acme", description="Acme NPUs through acme-smi",
                                device_kind="npu"))
    """


@hookspec
def register_log_formats(register: Callable[[LogFormat], None]) -> None:
    """Register log formats (``harness.logformat.LogFormat`` instances).

    Framework plugins contribute the formats of their ecosystem; ``harness parse`` and the
    live progress display use them. A format declares its name, unit and parser class in its
    class statement (its docstring is its description), says whether a line is one of its
    own (``detect``) and gives a line-by-line parser (``new_parser`` -> ``feed``/``finish``).

    Example::

        # myfw_harness/myfw_log.py
        class MyFwFormat(LogFormat, name="myfw", unit="samples/s", parser=MyFwParser):
            \"\"\"MyFw step lines: 'step N ... X samples/s'\"\"\"

            def detect(self, line):
                return line.startswith("step ") and "samples/s" in line

        # myfw_harness/log_formats_plugin.py
        @hookimpl
        def register_log_formats(register):
            from myfw_harness.myfw_log import MyFwFormat

            register(MyFwFormat())
    """


@hookspec
def register_commands(cli: typer.Typer) -> None:
    """Add commands or command groups to the ``harness`` CLI (a ``typer.Typer``).

    Example::

        @hookimpl
        def register_commands(cli):
            @cli.command("acme-info", help="Show the Acme driver version.")
            def acme_info():
                typer.echo(acme_smi.driver_version())
    """


@hookspec
def certify_suites() -> list[Path]:
    """Return certification suite files (TOML) this plugin provides.

    ``harness certify suites`` lists them and ``harness certify run --suite <stem>`` runs
    them; the format is the built-in suites' (``harness/certify/suites/*.toml``). A suite
    named like a built-in one does not replace it.

    Example::

        @hookimpl
        def certify_suites():
            return [Path(__file__).parent / "suites" / "acme_llm.toml"]
    """


# --------------------------------------------------------------------------- vendor


@hookspec(firstresult=True)
def discover_devices(vendor: str) -> DeviceSet | None:
    """Return the devices of ``vendor`` on this machine.

    Called on the plugin that registered ``vendor``. Raise
    ``harness.errors.UnavailableError`` with a one-line explanation and a suggestion when the
    devices or the driver are missing. Set ``visible_devices_env`` to the variable that
    selects devices for your runtime; the devices' ``index`` is what that variable lists.

    Example::

        @hookimpl
        def discover_devices(vendor):
            chips = acme_smi.list_chips()  # the vendor's own driver binding
            if not chips:
                raise UnavailableError("no Acme NPU found: is the acme driver loaded? (try acme-smi)")
            return DeviceSet(
                vendor=vendor, kind="npu", driver_version=acme_smi.driver_version(),
                visible_devices_env="ACME_VISIBLE_DEVICES",
                devices=[DeviceInfo(index=c.index, name=c.name, memory_bytes=c.memory_bytes)
                         for c in chips],
            )
    """


@hookspec(firstresult=True)
def vendor_case_config(
    vendor: str, case: CaseSpec, framework: str, nproc: int, nnodes: int,
    hardware_config: str | None,
) -> VendorCaseConfig | None:
    """Return the vendor's per-case config for this case/framework/layout, or ``None``.

    Called on the plugin that registered ``vendor``. ``hardware_config`` names a config
    explicitly (e.g. ``config_TP2PP1SH1SP4A10080Gx1x8``); when it is ``None`` pick the one
    that matches ``nnodes``/``nproc``, if any.
    ``harness.vendor_configs.find_vendor_config`` implements the usual folder layout.

    Its values override the case defaults (only keys the case lists in
    ``vendor_overridable``) and are in turn overridden by ``--set`` on the command line.

    Example::

        CONFIGS = Path(__file__).parent / "configs"  # configs/<case>/<framework>/<name>.toml

        @hookimpl
        def vendor_case_config(case, framework, nproc, nnodes, hardware_config):
            return find_vendor_config(CONFIGS, case.name, framework, nnodes, nproc, hardware_config)
    """


@hookspec(firstresult=True)
def device_peak_flops(devices: DeviceSet, precision: str) -> float | None:
    """Return the dense peak FLOP/s of ONE of ``devices`` at ``precision``, or ``None``.

    Called on the plugin that registered ``devices.vendor``. ``precision`` is the run's
    (``fp32``, ``fp16``, ``bf16``, ...); answer ``None`` for a device or precision your
    reviewed table does not know, and the result then carries no MFU rather than a guessed
    one. The core computes MFU = model FLOP/s per device (``model_flops``) / this peak.

    Example::

        PEAK_FLOPS = {("Acme N1", "bf16"): 400e12, ("Acme N1", "fp32"): 100e12}  # datasheet, dense

        @hookimpl
        def device_peak_flops(devices, precision):
            names = {d.name for d in devices.devices}
            if len(names) != 1:
                return None  # mixed devices: no single peak to divide by
            return PEAK_FLOPS.get((names.pop(), precision))
    """


@hookspec(firstresult=True)
def matmul_probe(context: RunContext, env: ExecutionEnv) -> MatmulRate | None:
    """Measure the dense matmul rate one of the run's devices achieves, or return ``None``.

    Called on the plugin that registered ``context.framework``, in the environment of
    ``prepare_env`` whose ``env.env`` holds the variables one training process of the run gets
    (the framework's and the vendor's: threads, visible devices; run the probe with them), before
    a certification's runs: a short probe (a second or two of large
    matmuls at the run's precision, on the device the vendor's backend names, through the
    framework itself). Certification records it beside the vendor's ``device_peak_flops``
    and fails a point whose declared peak is below what the device was measured doing (an
    understated peak inflates MFU) or whose MFU exceeds what the probe allows. A framework
    without a probe leaves MFU unbounded, and the certification says so.

    Example::

        @hookimpl
        def matmul_probe(context, env):
            out = subprocess.run([env.python, "-I", str(PROBE_SCRIPT), "--precision",
                                  context.config.settings.precision],
                                 capture_output=True, text=True, timeout=300, check=True)
            rate = json.loads(out.stdout.splitlines()[-1])
            return MatmulRate(flops_per_s=rate["flops_per_s"], size=rate["n"],
                              dtype=rate["dtype"], device=rate["device"])
    """


# --------------------------------------------------------------------------- model


@hookspec(firstresult=True)
def model_flops(context: RunContext) -> FlopsEstimate | None:
    """Return the training FLOPs per unit of throughput of ``context``'s model, or ``None``.

    The unit is that of ``context.case.unit`` (FLOPs per token for ``tokens/s``, per sample
    for ``samples/s``), counted from the resolved ``context.config.params`` with a named
    formula (``FlopsEstimate.formula``), e.g. GPT: 6·N + 12·L·h·s (PaLM, appendix B).
    Called only on the plugin that registered the run's case (and the built-in plugins that
    own its model family, ``context.case.model``): a plugin answers for the cases it
    registered, never for another plugin's. The core combines it with ``device_peak_flops``
    into MFU.

    Example::

        @hookimpl
        def model_flops(context):
            if context.case.model != "mlp":
                return None
            p = context.config.params
            n = p["num_layers"] * p["hidden_size"] ** 2  # weights of the square layers
            return FlopsEstimate(per_unit=6 * n, unit=context.case.unit, formula="6N",
                                 parameters=n)
    """


# --------------------------------------------------------------------------- workflow


@hookspec(firstresult=True)
def prepare_env(context: RunContext) -> ExecutionEnv | None:
    """Return the environment the run executes in: interpreter, variables, framework version.

    Called on the plugin that registered ``context.framework``. The core's fallback
    (``trylast``) is the running interpreter; a plugin may instead create or reuse an
    isolated virtual environment: ``harness.envs.prepare.isolated_env(context, spec)`` builds
    (once) or reuses one for an ``EnvSpec`` whose first requirement is the framework, puts
    the run's ``framework_requirement`` in its place where the config sets one, and builds
    offline from ``context.wheelhouse`` where there is one. ``context.env_mode == "current"``
    asks for the running interpreter. Raise ``UnavailableError`` with the install command
    when the framework is missing. A run that sets ``framework_requirement`` fails unless the
    returned environment's ``requirements`` hold it (only an environment built from it can).

    Example::

        @hookimpl
        def prepare_env(context):
            try:
                version = importlib.metadata.version("myfw")
            except importlib.metadata.PackageNotFoundError:
                raise UnavailableError("MyFW is not installed; `pip install myfw`") from None
            return ExecutionEnv(python=sys.executable, framework=context.framework,
                                framework_version=version, packages={"myfw": version})
    """


@hookspec(firstresult=True)
def prepare_data(context: RunContext) -> DatasetInfo | None:
    """Make sure the case's dataset (``context.case.dataset``) exists and say where it is.

    The data must be in the real on-disk format the training scripts read. Offline, it is
    synthesised in that same format, deterministically from ``context.config.settings.seed``,
    and kept under ``context.data_dir``. Called on the plugins that registered a case of
    this dataset kind (``context.case.dataset``); answer for the kinds you know.

    Example::

        @hookimpl
        def prepare_data(context):
            seed = context.config.settings.seed
            path = context.data_dir / "mlp-rows" / f"rows-{seed}.npy"
            if not path.exists():
                rows = numpy.random.default_rng(seed).standard_normal((4096, 256), dtype="float32")
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(".tmp.npy")
                numpy.save(tmp, rows)
                tmp.replace(path)  # atomic: never half a file
            return DatasetInfo(kind=context.case.dataset, path=str(path.parent),
                               files=[path.name], synthesized=True, seed=seed)
    """


@hookspec(firstresult=True)
def run(context: RunContext, env: ExecutionEnv, dataset: DatasetInfo) -> LaunchSpec | None:
    """Return the launch of the training processes: argv list, env, process count.

    Called on the plugin that registered ``context.framework``; the core executes the launch
    (see ``execute``), plugins never start processes here. The training script reads the
    resolved config from ``context.run_dir / "config.json"``. The vendor's plugin wraps this
    hook to add variables such as ``CUDA_VISIBLE_DEVICES`` to the returned launch.

    For a built-in framework's script the core owns the launch: a vendor's wrapper may add or
    change only the variables its ``DeviceBackend`` declares (``visible_devices_env`` and
    ``launch_env``); a changed command or any other variable, or a ``config.json`` other than
    the one the core wrote (also when the process ends), makes the run ``invalid``, naming the
    change. The core then starts the script in an isolated interpreter (``-I``,
    through its bootstrap, which puts the script folders on ``sys.path`` and records the
    sha256 of every script file imported) with an environment it assembles and records.

    Example::

        @hookimpl
        def run(context, env, dataset):
            s = context.config.settings
            argv = [env.python, "-m", "myfw.launch", f"--nproc={s.nproc}", str(TRAIN_SCRIPT),
                    "--config", str(context.run_dir / "config.json"), "--data", dataset.path]
            return LaunchSpec(argv=argv, env=env.env, nproc=s.nproc, nnodes=s.nnodes,
                              log_format="myfw")

    Example (a vendor's wrapper)::

        @hookimpl(wrapper=True)
        def run(context, env, dataset):
            launch = yield
            if launch is None:
                return None
            used = context.devices.devices[: context.config.settings.nproc]
            visible = {"ACME_VISIBLE_DEVICES": ",".join(str(d.index) for d in used)}
            return launch.model_copy(update={"env": {**launch.env, **visible}})
    """


@hookspec(firstresult=True)
def execute(
    context: RunContext, launch: LaunchSpec, log_path: Path, observer: RunObserver
) -> ProcessOutcome | None:
    """Execute ``launch``, write its output to ``log_path`` and return the outcome.

    ``observer.on_line(line, arrived)`` must receive every (scrubbed) output line, with the
    ``time.monotonic()`` at which it was read from the pipe (``None``: now; note it as the line
    is read, not after other work, or the witness's clock runs late): it drives the live
    progress display and the core's step clock: after the lines have been fed,
    ``observer.step_times`` maps each training step to the time at which its line arrived and ``observer.measured_window(skip_steps)`` gives the ``(start, end)`` of the
    measured steps in that clock (``None`` when too few steps were seen), the span over which a
    device monitor summarises utilisation (compilation and start-up left out).

    The core implements it (``trylast``): new process group, scrubbed log, progress, overall
    and no-output timeouts, Ctrl-C handling. Vendors wrap it (``wrapper=True``) to monitor
    their devices while the processes run and add measurements to ``outcome.extras``.
    A vendor that measures power puts the mean power of all devices together, in watts,
    while they were busy training, under ``outcome.extras["busy_power_w"]``; the core turns it
    into energy per token/sample (``result.efficiency.energy_per_unit_j``). The run summary
    also shows, where a vendor gives them per device over the measured steps:
    ``training_utilization_pct`` (with ``training_span_s``, and ``training_span_source`` saying
    what bounds the span), and ``training_sm_clock_mhz`` (mean clock, beside
    ``max_sm_clock_mhz``) with ``training_power_capped_pct`` and
    ``training_thermal_limited_pct`` (percent of samples in which power or heat held the
    clock down); every extra lands in ``result.device_metrics``.

    Example (a vendor's wrapper)::

        @hookimpl(wrapper=True)
        def execute(context, launch, log_path, observer):
            sampler = AcmePowerSampler(interval_s=0.5).start()  # the vendor's own monitor
            try:
                outcome = yield
            finally:
                watts = sampler.stop()
            outcome.extras["busy_power_w"] = watts
            return outcome
    """


@hookspec
def unsupported_reason(context: RunContext) -> str | None:
    """Say why this planned run cannot run on this machine, or return ``None``.

    Asked before anything is launched, so that nothing runs to a failure: ``harness run``
    refuses the run in one line (exit 2) with the reasons given, ``harness certify`` records
    the point as not run with them, and ``harness sweep`` lists the point of its matrix as
    skipped with them. Asked once per point (a sweep when it plans it, a certification before
    its first repeat): its runs keep that answer. E.g. a precision the device lacks (bf16 on
    a pre-Ampere GPU) or the framework has no kernels for on this device, or a setting the
    training script would ignore. Called on the plugins that registered the run's framework
    and vendor. Not ``firstresult``: every reason given is reported.

    Example::

        @hookimpl
        def unsupported_reason(context):
            if context.config.settings.precision == "fp16" and context.devices.kind == "cpu":
                return "MyFW fp16 training needs an accelerator (on the CPU use bf16 or fp32)"
            return None
    """


@hookspec(firstresult=True)
def parse_log(context: RunContext, log_path: Path) -> ParsedLog | None:
    """Turn the framework's own log lines into per-step metrics (``ParsedLog``).

    Optional: without it the core reads the log with the registered log format that the
    launch declared (``LaunchSpec.log_format``; see ``register_log_formats``). Implement it
    when no registered format fits. Called on the plugin that registered
    ``context.framework``. Step throughput is in ``context.case.unit``; put failure markers
    (a traceback, a NaN loss) in ``errors``.

    Example::

        STEP = re.compile(r"step ([0-9]+) [|] time ([^ ]+) s [|] loss ([^ ]+)")

        @hookimpl
        def parse_log(context, log_path):
            batch = context.config.settings.global_batch_size
            steps = []
            for line in log_path.read_text(encoding="utf-8", errors="replace").splitlines():
                if match := STEP.search(line):
                    seconds = float(match[2])
                    steps.append(StepRecord(step=int(match[1]), step_time_s=seconds,
                                            throughput=batch / seconds, loss=float(match[3])))
            return ParsedLog(format="myfw", unit=context.case.unit, steps=steps)
    """


# --------------------------------------------------------------------------- memory


@hookspec(firstresult=True)
def memory_plan(context: RunContext, device_memory_bytes: int) -> MemoryPlan | None:
    """Estimate the peak memory ONE device needs for ``context``'s run, and alternatives.

    Called on the plugin that registered ``context.framework`` (it knows what its training
    script keeps on the device); return ``None`` for a model you do not estimate and the run
    starts unplanned.
    ``device_memory_bytes`` is the smallest total memory of the devices the run uses.

    Return a ``MemoryPlan`` whose first candidate is the config as resolved (empty
    ``overrides``) and whose further candidates are other settings of the same case that
    need less memory, fastest first (less recompute before more, larger micro-batches before
    smaller, the optimizer in device memory before host memory). The core's memory planner
    keeps the first candidate that fits the device (less an allocator and context reserve),
    never changes a key the user set (on the command line or in a sweep file), and refuses the
    run in one line, before launching anything, when none fits, quoting ``hints`` (layouts
    that would fit).

    Example::

        @hookimpl
        def memory_plan(context, device_memory_bytes):
            if context.case.model != "gpt":
                return None
            current = MemoryEstimate(total_bytes=..., components={...}, formula="16N + ...")
            offload = MemoryEstimate(total_bytes=..., components={...}, formula="6N + ...")
            return MemoryPlan(candidates=[
                MemoryCandidate(estimate=current, label="as configured"),
                MemoryCandidate(overrides={"offload": "cpu"}, estimate=offload,
                                label="optimizer in host memory"),
            ], hints=[">= 2 GPUs of this memory (sharding stage 3)"])
    """
