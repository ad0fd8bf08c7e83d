"""One benchmark run, end to end: request -> resolved config -> env -> data -> launch -> result."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.case_string import parse_case_string
from harness.config_resolution import parse_set_pairs, resolve_config
from harness.dispatch import HookRouter
from harness.errors import UnavailableError, UserInputError
from harness.fingerprint import environment_fingerprint
from harness.metrics import (
    mean_throughput,
    measured_steps,
    median_throughput,
    step_time_stats,
)
from harness.models import BenchmarkResult, DeviceSet, ParsedLog, ProcessOutcome
from harness.models.context import RunContext
from harness.models.result import LogSummary, RepeatResult, Throughput
from harness.registry import Registry
from harness.results_io import atomic_write_text, new_run_id, write_run_files
from harness.store import ResultStore

if TYPE_CHECKING:
    import pluggy

    from harness.models import CaseSpec, DatasetInfo, ExecutionEnv


@dataclass
class RunRequest:
    """What the user asked for (the CLI's options, or a sweep's row)."""

    case: str
    vendor: str = "cpu"
    framework: str | None = None
    scale: Literal["full", "smoke"] = "full"
    run_mode: Literal["sp", "mp"] | None = None
    nproc: int | None = None
    nnodes: int | None = None
    batch_size: int | None = None
    precision: str | None = None
    max_steps: int | None = None
    set_pairs: list[str] = field(default_factory=list)
    repeat: int = 1
    output: Path = Path("results")
    data_dir: Path | None = None
    cache_dir: Path | None = None
    env_mode: Literal["auto", "current"] = "auto"
    hardware_config: str | None = None


@dataclass
class RunReport:
    result: BenchmarkResult
    run_dir: Path
    legacy_path: Path


class RunObserver:
    """Receives progress events; the CLI shows them, tests and sweeps may ignore them."""

    def stage(self, name: str, detail: str = "") -> None:  # noqa: D401 - simple hook
        pass

    def start_repeat(self, context: RunContext, total_steps: int, log_format: str) -> None:
        pass

    def on_line(self, line: str) -> None:
        pass

    def end_repeat(self) -> None:
        pass


def default_cache_dir() -> Path:
    import os

    base = os.environ.get("HARNESS_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "harness"
    )
    return Path(base)


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def plan(pm: pluggy.PluginManager, registry: Registry, request: RunRequest) -> RunContext:
    """Resolve names, devices and config. Raises UserInputError/UnavailableError on bad input."""
    parsed = parse_case_string(request.case)
    case = registry.cases.get(parsed.case)
    framework = request.framework or parsed.framework or _default_framework(registry, case)
    registry.check_case_framework(case, framework)
    registry.vendors.get(request.vendor)
    router = HookRouter(pm, registry)
    devices: DeviceSet = router.discover_devices(request.vendor)

    nproc = request.nproc or parsed.nproc
    nnodes = request.nnodes or parsed.nnodes
    if request.run_mode == "sp" and nproc not in (None, 1):
        raise UserInputError(f"--run-mode sp runs one process; got --nproc {nproc}")
    if nproc is None and request.run_mode == "mp":
        nproc = devices.count if devices.kind != "cpu" else 2
    if nproc is None:
        # A case that fixes its layout (e.g. Megatron's dp x tp x pp) keeps it; otherwise an
        # accelerator run uses every visible device, a CPU run one process.
        default = devices.count if devices.kind != "cpu" else 1
        nproc = int(case.settings.get("nproc", default))
    if devices.kind != "cpu" and nproc > devices.count:
        raise UnavailableError(
            f"--nproc {nproc} needs {nproc} {request.vendor} devices; this machine has "
            f"{devices.count}. Use --nproc {devices.count} or fewer."
        )
    nnodes = nnodes or int(case.settings.get("nnodes", 1))  # a case may fix its node count
    if parsed.repeat and request.repeat == 1:
        request.repeat = parsed.repeat  # the case string's repeat field, unless --repeat was given
    vendor_config = router.vendor_case_config(
        vendor=request.vendor, case=case, framework=framework, nproc=nproc, nnodes=nnodes,
        hardware_config=request.hardware_config,
    )
    cli_settings: dict[str, Any] = {
        "micro_batch_size": request.batch_size,
        "precision": request.precision,
        "max_steps": request.max_steps,
        "nproc": nproc,
        "nnodes": nnodes,
    }
    config = resolve_config(
        case,
        framework=framework,
        vendor=request.vendor,
        scale=request.scale,
        vendor_config=vendor_config,
        cli_settings=cli_settings,
        cli_set=parse_set_pairs(request.set_pairs),
    )
    run_id = new_run_id(case.name, framework, request.vendor)
    cache_dir = request.cache_dir or default_cache_dir()
    return RunContext(
        run_id=run_id,
        case=case,
        config=config,
        devices=devices,
        run_dir=(request.output / run_id).resolve(),
        data_dir=(request.data_dir or cache_dir / "data").resolve(),
        cache_dir=cache_dir.resolve(),
        env_mode=request.env_mode,
    )


def _default_framework(registry: Registry, case: CaseSpec) -> str:
    implementing = registry.frameworks_for(case)
    if not implementing:
        raise UnavailableError(f"no installed framework plugin implements case {case.name!r}")
    return "pytorch" if "pytorch" in implementing else implementing[0]


def _summarise_repeat(
    context: RunContext, index: int, outcome: ProcessOutcome, parsed: ParsedLog | None,
    log_format: str,
) -> tuple[RepeatResult, str | None]:
    """Turn one repeat's outcome and parsed log into a RepeatResult and a failure reason."""
    status, reason = outcome.status, outcome.reason
    final = stats = None
    if parsed is not None:
        measured = measured_steps(parsed.steps, context.config.settings.skip_steps)
        final = mean_throughput(measured) if parsed.steps else None
        stats = step_time_stats(measured) if parsed.steps else None
        if status == "success" and parsed.errors:
            status, reason = "failed", "log shows a failure: " + " | ".join(parsed.errors[-3:])
        elif status == "success" and final is None:
            status, reason = "failed", "no completed training steps were found in the log"
    elif status == "success":
        status, reason = "failed", "the framework plugin could not parse the log"
    repeat = RepeatResult(
        index=index,
        status=status,
        final_result=final,
        step_time=stats,
        log_file=Path(outcome.log_path).name,
        log_format=log_format,
        duration_s=outcome.duration_s,
    )
    return repeat, reason


def execute(
    pm: pluggy.PluginManager,
    registry: Registry,
    context: RunContext,
    request: RunRequest,
    observer: RunObserver | None = None,
) -> RunReport:
    """Run all repeats of a planned run and record the result (also when it fails)."""
    observer = observer or RunObserver()
    settings = context.config.settings
    run_dir = context.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(run_dir / "config.json", context.config.model_dump_json(indent=2) + "\n")
    started = _utcnow()

    router = HookRouter(pm, registry)
    observer.stage("environment", f"framework {context.framework}")
    env: ExecutionEnv = router.prepare_env(context)
    observer.stage("data", f"dataset {context.case.dataset}")
    dataset: DatasetInfo = router.prepare_data(context)

    repeats: list[RepeatResult] = []
    first_parsed: ParsedLog | None = None
    reason: str | None = None
    extras: dict[str, Any] = {}
    peak_memory: int | None = None
    for index in range(1, request.repeat + 1):
        ctx = context.model_copy(update={"repeat_index": index})
        launch = router.run(ctx, env, dataset)
        log_path = run_dir / ("train.log" if index == 1 else f"train.r{index}.log")
        observer.stage("train", f"repeat {index}/{request.repeat}")
        observer.start_repeat(ctx, settings.max_steps, launch.log_format)
        try:
            outcome: ProcessOutcome = router.execute(ctx, launch, log_path, observer)
        finally:
            observer.end_repeat()
        parsed: ParsedLog | None = router.parse_log(ctx, log_path)
        repeat, repeat_reason = _summarise_repeat(ctx, index, outcome, parsed, launch.log_format)
        repeats.append(repeat)
        extras.update(outcome.extras)
        if parsed is not None and parsed.peak_memory_bytes:
            peak_memory = max(peak_memory or 0, parsed.peak_memory_bytes)
        if index == 1:
            first_parsed = parsed
        if repeat.status != "success":
            reason = f"repeat {index}: {repeat_reason}" if request.repeat > 1 else repeat_reason
            break  # a failed or interrupted repeat ends the run; what ran is recorded

    result = _build_result(context, env, dataset, repeats, first_parsed, reason, extras,
                           peak_memory, started)
    result.efficiency = _efficiency(router, context, result)
    legacy_path = write_run_files(run_dir, result, context.case)
    ResultStore(request.output).add(result, run_dir)
    return RunReport(result=result, run_dir=run_dir, legacy_path=legacy_path)


def _build_result(context, env, dataset, repeats, first_parsed, reason, extras, peak_memory,
                  started) -> BenchmarkResult:
    settings = context.config.settings
    failed = next((r for r in repeats if r.status != "success"), None)
    status = failed.status if failed else "success"
    finals = [r.final_result for r in repeats if r.status == "success" and r.final_result]
    throughput = None
    if finals:
        value = statistics.median(finals)
        steps = first_parsed.steps if first_parsed else []
        measured = measured_steps(steps, settings.skip_steps)
        throughput = Throughput(
            value=value,
            unit=context.case.unit,
            per_device=value / settings.world_size,
            median=median_throughput(measured),
            method="mean-after-warmup" + (f", median of {len(finals)} repeats" if len(finals) > 1 else ""),
        )
    steps = first_parsed.steps if first_parsed else []
    losses = [s.loss for s in steps if s.loss is not None]
    return BenchmarkResult(
        run_id=context.run_id,
        case=context.case.name,
        model=context.case.model,
        framework=context.framework,
        framework_version=env.framework_version,
        vendor=context.vendor,
        devices=context.devices,
        nnodes=settings.nnodes,
        nproc=settings.nproc,
        run_mode=settings.run_mode,
        precision=settings.precision,
        micro_batch_size=settings.micro_batch_size,
        global_batch_size=_global_batch_size(settings, first_parsed),
        max_steps=settings.max_steps,
        steps_completed=max((s.step for s in steps), default=0),
        skip_steps=settings.skip_steps,
        throughput=throughput,
        step_time=repeats[0].step_time if repeats else None,
        loss_first=losses[0] if losses else None,
        loss_final=losses[-1] if losses else None,
        peak_memory_bytes=peak_memory,
        log_summary=_log_summary(first_parsed, repeats[0].log_format if repeats else None),
        device_metrics=extras,
        repeats=repeats,
        status=status,
        failure_reason=reason,
        config_hash=context.config.config_hash,
        config=context.config,
        dataset=dataset,
        environment=environment_fingerprint(env),
        started_at=started,
        finished_at=_utcnow(),
        log_file=repeats[0].log_file if repeats else "train.log",
    )


def _log_summary(parsed: ParsedLog | None, log_format: str | None) -> LogSummary | None:
    """Loss and learning-rate curves of the first repeat, thinned like an ingested log's."""
    if parsed is None:
        return None
    from harness.logparse.summary import Curve

    loss, learning_rate = Curve(), Curve()
    for step in parsed.steps:
        if step.loss is not None:
            loss.add(step.step, step.loss)
        if step.learning_rate is not None:
            learning_rate.add(step.step, step.learning_rate)
    meta = {k: v for k, v in parsed.meta.items() if isinstance(v, (str, int, float, bool))}
    return LogSummary(
        format=log_format or parsed.format,
        steps_parsed=len(parsed.steps),
        first_step=parsed.steps[0].step if parsed.steps else None,
        last_step=parsed.steps[-1].step if parsed.steps else None,
        framework_reported=parsed.framework_reported,
        loss_curve=loss.points,
        learning_rate_curve=learning_rate.points,
        meta=meta,
        notes=parsed.errors[-5:],
    )


def _global_batch_size(settings, parsed: ParsedLog | None) -> int:
    """The log's own global batch where it prints one: under tensor or pipeline parallelism
    only some processes hold data replicas, which the core cannot know."""
    logged = parsed.meta.get("global_batch_size") if parsed else None
    return logged if isinstance(logged, int) and logged > 0 else settings.global_batch_size


def _efficiency(router: HookRouter, context: RunContext, result: BenchmarkResult):
    """MFU and energy per unit from the plugins' FLOPs, peak and power (none when unknown)."""
    from harness.models.efficiency import compute_efficiency

    if result.throughput is None:
        return None
    flops = router.model_flops(context)
    peak = router.device_peak_flops(context.devices, context.config.settings.precision)
    power = result.device_metrics.get("busy_power_w")
    return compute_efficiency(
        throughput=result.throughput.value, unit=result.throughput.unit,
        world_size=context.config.settings.world_size,
        flops=flops, peak_flops_per_device=peak,
        busy_power_w=float(power) if isinstance(power, (int, float)) else None,
    )


def run_benchmark(
    pm: pluggy.PluginManager,
    request: RunRequest,
    observer: RunObserver | None = None,
    registry: Registry | None = None,
) -> RunReport:
    """Plan and execute one run: the library entry point behind ``harness run``."""
    registry = registry or Registry.from_plugins(pm)
    context = plan(pm, registry, request)
    return execute(pm, registry, context, request, observer)

