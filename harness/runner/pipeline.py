"""One benchmark run, end to end: request -> resolved config -> env -> data -> launch -> result."""

from __future__ import annotations

import shutil
import sqlite3
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from harness.cache import default_cache_dir
from harness.case_string import parse_case_string
from harness.config_resolution import parse_set_pairs, relabel_request_values, resolve_config
from harness.dispatch import HookRouter
from harness.errors import HarnessError, StorageError, UnavailableError, UserInputError
from harness.fingerprint import environment_fingerprint
from harness.launch import job_identity, rendezvous_endpoint, slurm_identity, split_endpoint
from harness.logparse.summary import LogReading, reading_of, stream_log
from harness.models import (
    BenchmarkResult, DeviceSet, ParsedLog, ProcessOutcome, ResolvedConfig, VendorSpec,
)
from harness.models.context import Launcher, RunContext
from harness.models.result import NodeRecord, RepeatResult
from harness.provenance import code_digests, run_provenance
from harness.readback import ReadbackCheck, check_log
from harness.registry import Registry
from harness.result_builder import (
    RUN_METHOD, FinalResult, build_result, log_peak_memory, log_verdict, modified_keys,
    repeat_figures,
)
from harness.results_io import atomic_write_text, new_run_id, write_run_files
from harness.runner.observer import RunObserver, StepClock
from harness.runner.signals import Terminated, deferred_signals, raise_for, stop_signals_raise
from harness.store import DamagedStoreError, ResultStore

if TYPE_CHECKING:
    import pluggy

    from harness.models import CaseSpec, DatasetInfo, ExecutionEnv, LaunchSpec, ResolvedConfig

__all__ = ["RunObserver", "RunReport", "RunRequest", "execute", "plan", "read_log",
           "replanned", "run_benchmark"]


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
    job_id: str | None = None  # multi-node: shared by every node (else HARNESS_JOB_ID, SLURM_JOB_ID)
    node_rank: int | None = None  # multi-node: this node's (else NODE_RANK, SLURM_NODEID)
    launcher: Launcher = "local"  # slurm: one srun task per node, identity from Slurm's variables
    # Config keys whose value this request carries from elsewhere than the command line, and
    # their source label (a sweep file's ``sweep:<file name>``); the others are ``cli``.
    origins: dict[str, str] = field(default_factory=dict)


@dataclass
class RunReport:
    result: BenchmarkResult
    run_dir: Path
    legacy_path: Path
    note: str | None = None  # something the user should know that the result does not say


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def plan(pm: pluggy.PluginManager, registry: Registry, request: RunRequest) -> RunContext:
    """Resolve names, devices, layout, repeats and config into the context of the run.

    The request is not changed: what plan() decides (including the case string's repeat
    count, ``RunContext.repeats``) is in the context it returns. Raises UserInputError /
    UnavailableError on bad input.
    """
    check_paths(request)
    parsed = parse_case_string(request.case)
    case = registry.cases.get(parsed.case)
    framework = request.framework or parsed.framework or _default_framework(registry, case)
    registry.check_case_framework(case, framework)
    vendor = registry.vendors.get(request.vendor)
    router = HookRouter(pm, registry)
    devices: DeviceSet = router.discover_devices(request.vendor)

    nproc, nproc_source = _plan_nproc(request, parsed.nproc, case, devices)
    nnodes, nnodes_source = request.nnodes or parsed.nnodes, "cli"
    slurm = slurm_identity(request.job_id, request.node_rank) if request.launcher == "slurm" else None
    if slurm is not None:  # the step's node count is the job's
        if nnodes is not None and nnodes != slurm.nnodes:
            raise UserInputError(f"--nnodes {nnodes} contradicts the Slurm step's {slurm.nnodes} "
                                 "node(s); leave --nnodes out under --launcher slurm")
        nnodes, nnodes_source = slurm.nnodes, "slurm"
    if nnodes is None:
        nnodes, nnodes_source = int(case.settings.get("nnodes", 1)), None  # a case may fix it
    # The case string's repeat field counts unless --repeat was given.
    repeats = parsed.repeat if parsed.repeat and request.repeat == 1 else request.repeat
    vendor_config = router.vendor_case_config(
        vendor=request.vendor, case=case, framework=framework, nproc=nproc, nnodes=nnodes,
        hardware_config=request.hardware_config,
    )
    cli_settings: dict[str, Any] = {
        "micro_batch_size": request.batch_size,
        "precision": request.precision,
        "max_steps": request.max_steps,
    }
    config = resolve_config(
        case,
        framework=framework,
        vendor=request.vendor,
        scale=request.scale,
        vendor_config=vendor_config,
        cli_settings=cli_settings,
        cli_set=parse_set_pairs(request.set_pairs),
        layout={"nproc": (nproc, nproc_source), "nnodes": (nnodes, nnodes_source)},
    )
    config.sources = relabel_request_values(config.sources, request.origins)
    config = _with_device_backend(config, vendor)
    owners = {router.framework_owner(framework), router.vendor_owner(request.vendor),
              *router.case_owners(case, "dataset"), *router.case_owners(case, "model")}
    vendor_config_path = vendor_config.path if vendor_config is not None else None
    config = config.model_copy(update={"code": code_digests(pm, owners, vendor_config_path)})
    identity = slurm or job_identity(request.job_id, request.node_rank, config.settings.nnodes)
    job_id, node_rank = identity.job_id, identity.node_rank
    endpoint = (rendezvous_endpoint(job_id, identity.master_addr)
                if config.settings.nnodes > 1 and job_id else None)
    run_id = _run_id(case.name, framework, request.vendor, config.settings.nnodes, job_id, node_rank)
    cache_dir = request.cache_dir or default_cache_dir()
    context = RunContext(
        run_id=run_id,
        case=case,
        config=config,
        vendor_config_path=vendor_config_path,
        devices=devices,
        run_dir=(request.output / run_id).resolve(),
        data_dir=(request.data_dir or cache_dir / "data").resolve(),
        cache_dir=cache_dir.resolve(),
        env_mode=request.env_mode,
        repeats=repeats,
        job_id=job_id,
        node_rank=node_rank,
        rendezvous_endpoint=endpoint,
        launcher=request.launcher,
    )
    from harness.memory_planner import fit_to_memory

    return fit_to_memory(router, context)


def _run_id(case: str, framework: str, vendor: str, nnodes: int, job_id: str | None,
            node_rank: int) -> str:
    if nnodes > 1:
        # The job's id names its result, the same on every node; node 0 records the result,
        # the others a node record in a folder of their own.
        run_id = f"{job_id}-{case}-{framework}-{vendor}"
        return run_id + (f".node{node_rank}" if node_rank else "")
    return new_run_id(case, framework, vendor)


def replanned(context: RunContext) -> RunContext:
    """A planned context for one more run of the same config (a certification's next
    repeat): the run id and folder plan() would give it, everything else as planned."""
    run_id = _run_id(context.case.name, context.framework, context.vendor,
                     context.config.settings.nnodes, context.job_id, context.node_rank)
    return context.model_copy(update={"run_id": run_id, "run_dir": context.run_dir.with_name(run_id)})


def check_paths(request: RunRequest) -> None:
    """Folders the user named must be usable before anything is created."""
    if request.output.exists() and not request.output.is_dir():
        raise UserInputError(f"--output {request.output} is a file; give a folder (it is created "
                             "when missing)")
    if request.data_dir is not None and not request.data_dir.is_dir():
        what = "is not a folder" if request.data_dir.exists() else "does not exist"
        raise UserInputError(f"--data-dir {request.data_dir} {what}; give the folder that holds "
                             "the dataset, or leave it out to use the cache")


def _with_device_backend(config: ResolvedConfig, vendor: VendorSpec) -> ResolvedConfig:
    """The config with the vendor's device backend, which the training scripts read; a
    precision the backend does not declare is refused here, before anything starts."""
    backend = vendor.backend
    if backend is None:
        return config
    precision = config.settings.precision
    if precision not in backend.precisions:
        raise UnavailableError(
            f"vendor {vendor.name!r} has no {precision} (its {backend.device_type} devices train "
            f"in {', '.join(sorted(backend.precisions))}); use --precision "
            f"{' or '.join(sorted(backend.precisions))}"
        )
    return config.model_copy(update={"device": backend})


def _plan_nproc(request: RunRequest, case_string_nproc: int | None, case: CaseSpec,
                devices: DeviceSet) -> tuple[int, str | None]:
    """Processes per node and where the number came from (None: the case's own default)."""
    nproc = request.nproc or case_string_nproc
    if request.run_mode == "sp":
        if nproc not in (None, 1):
            raise UserInputError(f"--run-mode sp runs one process; got --nproc {nproc}")
        return 1, "cli"
    if nproc is not None:
        source = "cli"
    elif request.run_mode == "mp":
        nproc, source = (devices.count if devices.kind != "cpu" else 2), "cli"
    elif "nproc" in case.settings:
        # A case that fixes its layout (e.g. Megatron's dp x tp x pp) keeps it.
        nproc, source = int(case.settings["nproc"]), None
    elif devices.kind != "cpu":
        nproc, source = devices.count, f"devices:{request.vendor}"  # every visible device
    else:
        nproc, source = 1, None  # a CPU run: one process
    if devices.kind != "cpu" and nproc > devices.count:
        raise UnavailableError(
            f"--nproc {nproc} needs {nproc} {request.vendor} devices; this machine has "
            f"{devices.count}. Use --nproc {devices.count} or fewer."
        )
    return nproc, source


def _default_framework(registry: Registry, case: CaseSpec) -> str:
    implementing = registry.frameworks_for(case)
    if not implementing:
        raise UnavailableError(f"no installed framework plugin implements case {case.name!r}")
    return "pytorch" if "pytorch" in implementing else implementing[0]


def read_log(router: HookRouter, context: RunContext, launch: LaunchSpec,
             log_path: Path) -> LogReading | None:
    """Read a repeat's log once: with the framework's ``parse_log`` where it implements one
    (its ParsedLog wins), else with the registered LogFormat the launch declared. None when
    neither can read it."""
    parsed: ParsedLog | None = router.parse_log(context, log_path)
    if parsed is not None:
        return reading_of(parsed)
    formats = router.registry.log_formats
    if launch.log_format not in formats:
        return None
    return stream_log(log_path, formats.get(launch.log_format), **log_hints(context))


def log_hints(context: RunContext) -> dict[str, int | None]:
    """What a run's log may not say but its config knows: process count, micro batch and
    sequence length (per-process figures are scaled to the job, samples to tokens)."""
    return config_log_hints(context.config)


def config_log_hints(config: ResolvedConfig) -> dict[str, int | None]:
    """``log_hints`` from a resolved config alone (re-reading a recorded run's log)."""
    settings = config.settings
    seq_len = config.params.get("seq_len")
    return {"gpus": settings.world_size, "batch_size": settings.micro_batch_size,
            "seq_len": int(seq_len) if isinstance(seq_len, (int, float)) else None}


def _summarise_repeat(
    context: RunContext, index: int, outcome: ProcessOutcome, reading: LogReading | None,
    log_format: str, readback: ReadbackCheck,
) -> tuple[RepeatResult, str | None]:
    """Turn one repeat's outcome, log and read-back check into a RepeatResult and a failure
    reason. A run that finished but trained something other than its config is invalid."""
    figures = repeat_figures(reading, context.config.settings.skip_steps)
    status, reason = log_verdict(outcome.status, outcome.reason, reading,
                                 has_value=figures.final is not None)
    if status == "success" and not readback.ok:
        status, reason = "invalid", readback.reason()
    repeat = RepeatResult(
        index=index,
        status=status,
        final_result=figures.final,
        step_time=figures.step_time,
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
    """Run all ``context.repeats`` repeats of a planned run and record the result (also when
    it fails, is interrupted or terminated, or the disk fills up) under ``request.output``.

    A plugin's one-line error raised before anything trained (a missing package, a layout
    that does not fit) removes the run folder again and propagates. Raises
    :class:`~harness.errors.StorageError` when the result could not be written everywhere.
    """
    reasons = HookRouter(pm, registry).unsupported_reasons(context)
    if reasons:  # said before anything is launched or written, as a sweep skips such a point
        raise UnavailableError("; ".join(reasons))
    observer = observer or RunObserver()
    with stop_signals_raise():
        run_dir = context.run_dir
        try:
            run_dir.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise UserInputError(_folder_exists_message(context)) from None
        except OSError as exc:
            raise StorageError(f"could not create the run folder {run_dir}: {exc.strerror or exc}") from None
        attempt = _Attempt(started=_utcnow())
        collector = _start_collector(context)
        try:
            try:
                atomic_write_text(run_dir / "config.json", context.config.model_dump_json(indent=2) + "\n")
                _run_repeats(pm, registry, context, observer, attempt)
            except HarnessError as exc:
                if not attempt.launched:
                    shutil.rmtree(run_dir, ignore_errors=True)  # nothing ran: no half run folder
                    raise
                attempt.fail("failed", f"{attempt.stage} failed: {exc}")
            except KeyboardInterrupt:
                attempt.fail("interrupted", f"interrupted by the user (SIGINT) during {attempt.stage}")
            except Terminated as exc:
                attempt.fail("terminated", f"{exc} during {attempt.stage}")
            except OSError as exc:  # a full disk or a missing file while preparing the run
                where = f": {exc.filename}" if exc.filename else ""
                attempt.fail("failed", f"{attempt.stage} failed: {exc.strerror or exc}{where}")
            nodes = _gather_nodes(context, attempt, collector) if collector else []
        finally:
            if collector is not None:
                collector.close()
        # Whatever signals arrive now, the result is written; a stop signal that came while
        # the run was already stopping means nothing more.
        with deferred_signals() as held:
            if context.node_rank:
                report = _record_node(context, attempt)
            else:
                report = _record(registry, context, request, attempt, nodes)
        if held and report.result.status not in ("interrupted", "terminated"):
            raise_for(held[0])
        if context.node_rank and context.rendezvous_endpoint:
            report.note = _send_record(context, report)
        return report


def _folder_exists_message(context: RunContext) -> str:
    if context.config.settings.nnodes > 1:
        return (f"job {context.job_id!r} already has a run folder {context.run_dir}: a job id names "
                "one job, so each run of a multi-node job needs a new --job-id (or HARNESS_JOB_ID) "
                "on every node; nothing was overwritten")
    return f"run folder {context.run_dir} already exists; nothing was overwritten"


@dataclass
class _Attempt:
    """What one run produced so far: kept up to date so that an interruption at any point
    still records everything that ran."""

    started: datetime
    stage: str = "environment preparation"
    launched: bool = False
    env: ExecutionEnv | None = None
    dataset: DatasetInfo | None = None
    repeats: list[RepeatResult] = field(default_factory=list)
    first: LogReading | None = None
    first_readback: dict[str, Any] | None = None
    scripts: list[str] = field(default_factory=list)
    reason: str | None = None
    status: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    peak_memory: int | None = None
    efficiency_router: HookRouter | None = None
    outcomes: list[ProcessOutcome] = field(default_factory=list)

    def fail(self, status: str, reason: str) -> None:
        if self.status is None:
            self.status, self.reason = status, reason


def _run_repeats(pm, registry, context: RunContext, observer: RunObserver,
                 attempt: _Attempt) -> None:
    settings = context.config.settings
    router = attempt.efficiency_router = HookRouter(pm, registry)
    if context.memory_estimate is not None:
        from harness.memory_planner import planner_note

        observer.stage("memory", planner_note(context))
    observer.stage("environment", f"framework {context.framework}")
    attempt.env = router.prepare_env(context)
    attempt.stage = "data preparation"
    observer.stage("data", f"dataset {context.case.dataset}")
    attempt.dataset = router.prepare_data(context)
    # The planner's router routed these two to the vendor's plugin; record them here too.
    router.note("discover_devices", {router.vendor_owner(context.vendor)})
    router.note("vendor_case_config", {router.vendor_owner(context.vendor)})
    flops = router.model_flops(context)
    info = getattr(pm, "harness_info", {}).get(router.framework_owner(context.framework))
    # Built-in frameworks' scripts all print a read-back line; a third-party framework that
    # prints none is recorded as not read back rather than failed.
    readback_required = info is not None and info.source == "builtin"

    total = context.repeats
    for index in range(1, total + 1):
        attempt.stage = f"repeat {index}"
        ctx = context.model_copy(update={"repeat_index": index})
        launch = router.run(ctx, attempt.env, attempt.dataset)
        attempt.scripts += [s for s in launch.scripts if s not in attempt.scripts]
        log_path = context.run_dir / ("train.log" if index == 1 else f"train.r{index}.log")
        observer.stage("train", f"repeat {index}/{total}")
        clock = StepClock(observer, registry.log_formats.items)
        clock.start_repeat(ctx, settings.max_steps, launch.log_format)
        attempt.launched = True
        try:
            outcome: ProcessOutcome = router.execute(ctx, launch, log_path, clock)
        finally:
            clock.end_repeat()
        attempt.outcomes.append(outcome)
        if context.node_rank:  # the training figures are node 0's
            if outcome.status != "success":
                attempt.fail(outcome.status, outcome.reason or outcome.status)
                break
            continue
        reading = read_log(router, ctx, launch, log_path)
        readback = check_log(
            log_path, ctx.config, device_kind=ctx.devices.kind, identifying=ctx.case.immutable,
            model_parameters=flops.model_parameters if flops is not None else None,
            required=readback_required)
        repeat, repeat_reason = _summarise_repeat(ctx, index, outcome, reading, launch.log_format,
                                                  readback)
        attempt.repeats.append(repeat)
        attempt.extras.update(outcome.extras)
        memory = log_peak_memory(reading)
        if memory:
            attempt.peak_memory = max(attempt.peak_memory or 0, memory)
        if index == 1:
            attempt.first, attempt.first_readback = reading, readback.readback
        if repeat.status != "success":
            attempt.fail(repeat.status,
                         f"repeat {index}: {repeat_reason}" if total > 1 else repeat_reason)
            break  # a failed or interrupted repeat ends the run; what ran is recorded


NODE_RECORD = "node.json"


def _node_record(context: RunContext, attempt: _Attempt) -> NodeRecord:
    """This node's part of a multi-node job: how its launch ended (naming the ranks the
    launcher says failed), its scrubbed host name and a digest of its log."""
    import hashlib
    import socket

    from harness.launch import torchrun_failed_ranks
    from harness.runner.scrub import scrub_line

    outcome = attempt.outcomes[-1] if attempt.outcomes else None
    status = outcome.status if outcome else (attempt.status or "failed")
    if context.node_rank and attempt.status and status == "success":
        status = attempt.status  # something after the launch failed on this node
    log = context.run_dir / ("train.log" if len(attempt.outcomes) <= 1
                             else f"train.r{len(attempt.outcomes)}.log")
    digest, failed_ranks = None, []
    if log.exists():
        data = log.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        failed_ranks = torchrun_failed_ranks(data[-64 * 1024:].decode("utf-8", "replace").splitlines())
    host = socket.gethostname()
    reason = None
    if status != "success":
        reason = outcome.reason if outcome and outcome.reason else attempt.reason
        if failed_ranks:  # the launcher named the ranks: they say more than its traceback
            headline = (reason or "").split(": ", 1)[0]
            reason = "; ".join(failed_ranks) + (f" ({headline})" if headline else "")
    return NodeRecord(
        job_id=context.job_id or "", job_run_id=context.run_id.rsplit(".node", 1)[0],
        node_rank=context.node_rank, nnodes=context.config.settings.nnodes,
        host=scrub_line(host), host_digest=hashlib.sha256(host.encode()).hexdigest()[:12],
        status=status, exit_code=outcome.exit_code if outcome else None, reason=reason,
        failed_ranks=failed_ranks, log_file=log.name if log.exists() else None, log_sha256=digest,
    )


def _start_collector(context: RunContext):
    """Node 0 of a multi-node job listens for the other nodes' records (one port above the
    rendezvous port) while the job runs."""
    if context.node_rank or not context.rendezvous_endpoint or not context.job_id:
        return None
    from harness.runner.node_exchange import NodeRecordCollector

    _, port = split_endpoint(context.rendezvous_endpoint)
    collector = NodeRecordCollector(context.job_id, context.config.settings.nnodes, port + 1)
    collector.start()
    return collector


def _gather_nodes(context: RunContext, attempt: _Attempt, collector) -> list[NodeRecord]:
    """Node 0's record and the other nodes' (waiting a bounded grace for the missing ones; not
    at all when the user stopped the run); a node that sent none is listed as missing."""
    from harness.runner.node_exchange import RECORD_GRACE_S

    grace = 0.0 if attempt.status in ("interrupted", "terminated") else RECORD_GRACE_S
    try:
        received = collector.wait(grace)
    except KeyboardInterrupt:
        attempt.fail("interrupted", "interrupted by the user (SIGINT) while gathering node records")
        received = dict(collector.records)
    except Terminated as exc:
        attempt.fail("terminated", f"{exc} while gathering node records")
        received = dict(collector.records)
    nodes = [_node_record(context, attempt)]
    for rank in range(1, context.config.settings.nnodes):
        nodes.append(received.get(rank) or NodeRecord(
            job_id=context.job_id or "", job_run_id=context.run_id, node_rank=rank,
            nnodes=context.config.settings.nnodes, host="<unknown>", status="missing",
            reason=collector.problem or f"no node record reached node 0 within {grace:g} s "
                                        "after its launch ended"))
    return nodes


def _send_record(context: RunContext, report: RunReport) -> str | None:
    from harness.runner.node_exchange import send_node_record

    host, port = split_endpoint(context.rendezvous_endpoint or "")
    record = NodeRecord.model_validate_json((report.run_dir / NODE_RECORD).read_text())
    problem = send_node_record(record, host, port + 1)
    return f"node record not delivered to node 0: {problem}" if problem else None


def _record_node(context: RunContext, attempt: _Attempt) -> RunReport:
    """A node other than node 0 of a multi-node job: its processes' outcome, not a result
    (the training figures are node 0's); a node record pointing at the job's result."""
    record = _node_record(context, attempt)
    try:
        atomic_write_text(context.run_dir / NODE_RECORD, record.model_dump_json(indent=1) + "\n")
    except OSError as exc:
        raise StorageError(f"could not write the node record in {context.run_dir}: "
                           f"{exc.strerror or exc}") from None
    result = _node_result(context, attempt, record.status, record.reason)
    return RunReport(result=result, run_dir=context.run_dir, legacy_path=context.run_dir / NODE_RECORD)


def _node_result(context: RunContext, attempt: _Attempt, status: str, reason: str | None):
    """The in-memory result the CLI reports for a node record (not written, not stored)."""
    return build_result(
        run_id=context.run_id, config=context.config, reading=None, log_format=None, final=None,
        unit=context.case.unit, step_time=None, status=status,  # type: ignore[arg-type]
        failure_reason=reason,
        framework_version=attempt.env.framework_version if attempt.env else None,
        environment=environment_fingerprint(attempt.env), started_at=attempt.started,
        finished_at=_utcnow(), log_file="train.log", peak_memory_bytes=None,
        devices=context.devices, dataset=attempt.dataset, repeats=attempt.repeats,
    )


def _record(registry: Registry, context: RunContext, request: RunRequest,
            attempt: _Attempt, nodes: list[NodeRecord] | None = None) -> RunReport:
    """Build the result and write it to the run folder and the database; each write is tried
    even when another failed (a full disk), and what failed is one StorageError."""
    settings = context.config.settings
    repeats = attempt.repeats
    status = attempt.status or next((r.status for r in repeats if r.status != "success"), "success")
    if not repeats and status == "success":  # nothing ran and nothing said why
        status, attempt.reason = "failed", "no repeat ran"
    failed_nodes = [n for n in nodes or [] if n.node_rank and n.status not in ("success", "missing")]
    if failed_nodes:  # the other nodes' failures first: they are usually the cause
        named = "; ".join(f"node {n.node_rank} ({n.status}): {n.reason or 'no reason given'}"
                          for n in failed_nodes)
        attempt.reason = f"{named}; node 0: {attempt.reason}" if attempt.reason else named
        if status == "success":
            status = "failed"
    result = build_result(
        run_id=context.run_id, config=context.config, reading=attempt.first,
        log_format=repeats[0].log_format if repeats else None,
        final=_final_result(repeats, attempt.first, settings.skip_steps), unit=context.case.unit,
        step_time=repeats[0].step_time if repeats else None,
        status=status,  # type: ignore[arg-type]
        failure_reason=attempt.reason,
        framework_version=attempt.env.framework_version if attempt.env else None,
        environment=environment_fingerprint(attempt.env), started_at=attempt.started,
        finished_at=_utcnow(),
        log_file=repeats[0].log_file if repeats else "train.log",
        peak_memory_bytes=attempt.peak_memory, devices=context.devices, dataset=attempt.dataset,
        repeats=repeats, device_metrics=attempt.extras, modified=modified_keys(context.config),
        readback=attempt.first_readback,
        provenance=run_provenance(attempt.efficiency_router.pm, attempt.efficiency_router,
                                  attempt.scripts, context.vendor_config_path)
        if attempt.efficiency_router is not None else None,
    )
    if attempt.efficiency_router is not None and attempt.env is not None:
        result.efficiency = _efficiency(attempt.efficiency_router, context, result)
    result.memory_estimate = context.memory_estimate
    result.job_id, result.nodes = context.job_id, list(nodes or [])
    run_dir = context.run_dir
    problems: list[str] = []
    legacy_path = run_dir / "index"
    try:
        legacy_path = write_run_files(run_dir, result, context.case)
    except OSError as exc:
        problems.append(f"result files in {run_dir}: {exc.strerror or exc}")
    try:
        ResultStore(request.output).add(result, run_dir)
    except DamagedStoreError as exc:
        problems.append(str(exc))
    except (OSError, sqlite3.Error) as exc:
        problems.append(f"database {ResultStore(request.output).path}: {exc}")
    report = RunReport(result=result, run_dir=run_dir, legacy_path=legacy_path)
    if problems:
        raise StorageError(f"run {result.status}, but could not record its result: "
                           + "; ".join(problems), report=report)
    return report


def _final_result(repeats: list[RepeatResult], first: LogReading | None,
                  skip_steps: int) -> FinalResult | None:
    """The median over the successful repeats of their FINAL_RESULT (the median step
    throughput is the first repeat's)."""
    finals = [r.final_result for r in repeats if r.status == "success" and r.final_result]
    if not finals:
        return None
    method = RUN_METHOD + (f", median of {len(finals)} repeats" if len(finals) > 1 else "")
    figures = repeat_figures(first, skip_steps)
    return FinalResult(value=statistics.median(finals), median=figures.median, method=method,
                       total_work=figures.total_work)


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
    """Plan and execute one run in one call, for library users and tests.

    The CLI does not come through here: ``harness run`` (``harness/cli/run.py``) and sweeps
    call :func:`plan` and :func:`execute` themselves, with the registry they already hold.
    """
    registry = registry or Registry.from_plugins(pm)
    context = plan(pm, registry, request)
    return execute(pm, registry, context, request, observer)

