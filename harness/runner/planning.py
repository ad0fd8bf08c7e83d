"""Planning a run: the request's names, devices, layout, repeats and config resolved into the
RunContext that execute() runs, and the context of one more run of the same config."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.cache import default_cache_dir
from harness.case_string import parse_case_string
from harness.config_resolution import parse_set_pairs, relabel_request_values, resolve_config
from harness.envs.wheelhouse import wheelhouse_from
from harness.errors import UnavailableError, UserInputError
from harness.launch import job_identity, rendezvous_endpoint, slurm_identity
from harness.models import DeviceSet, ResolvedConfig, VendorSpec
from harness.models.context import RunContext
from harness.provenance import code_digests
from harness.results_io import new_run_id
from harness.runner.request import RunRequest

if TYPE_CHECKING:
    from harness.app import Harness

    from harness.models import CaseSpec


def plan(harness: Harness, request: RunRequest) -> RunContext:
    """Resolve names, devices, layout, repeats and config into the context of the run.

    The request is not changed: what plan() decides (including the case string's repeat
    count, ``RunContext.repeats``) is in the context it returns. Raises UserInputError /
    UnavailableError on bad input.
    """
    check_paths(request)
    wheelhouse = wheelhouse_from(request.wheelhouse)
    registry = harness.registry
    parsed = parse_case_string(request.case)
    case = registry.cases.get(parsed.case)
    framework = request.framework or parsed.framework or registry.default_framework(case)
    registry.check_case_framework(case, framework)
    vendor = registry.vendors.get(request.vendor)
    router = harness.router()
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
        "micro_batch_size": request.micro_batch_size,
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
    config = config.model_copy(update={"code": code_digests(harness, owners, vendor_config_path)})
    identity = slurm or job_identity(request.job_id, request.node_rank, config.settings.nnodes)
    job_id, node_rank = identity.job_id, identity.node_rank
    settings = config.settings
    if settings.skip_steps >= settings.max_steps:  # FINAL_RESULT would be a warm-up figure
        raise UserInputError(
            f"skip_steps {settings.skip_steps} leaves no step to measure in max_steps "
            f"{settings.max_steps}: skip_steps must be below max_steps (the steps after the "
            f"warm-up are the measured ones)")
    if config.settings.nnodes > 1:
        from harness.runner.job_link import check_multinode_ready

        check_multinode_ready()
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
        wheelhouse=wheelhouse,
        env_mode=request.env_mode,
        repeats=repeats,
        job_id=job_id,
        node_rank=node_rank,
        rendezvous_endpoint=endpoint,
        launcher=request.launcher,
    )
    from harness.memory_planner import fit_to_memory

    return router.carry_plan(fit_to_memory(router, context))


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
