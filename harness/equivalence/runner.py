"""Running the frameworks of an equivalence check and judging their traces.

Each framework trains the case through the ordinary run pipeline (plan -> execute), one
process, fp32 (the model's arithmetic: the case's ``equivalence_precision``), with the case's ``equivalence_settings`` and an ``equivalence`` section in its
resolved config: the first framework exports its initial state in canonical names and the
others load it, or every framework loads a stored reference's state (certification). The
check's folder keeps everything: the state, each framework's trace and final state, the run
folders and ``equivalence.json``, the verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from harness.equivalence.check import compare_traces, load_state
from harness.equivalence.result import EquivalenceResult, FrameworkRun, new_check_dir
from harness.equivalence.trace import Trace, read_trace
from harness.errors import HarnessError, UnavailableError, UserInputError

if TYPE_CHECKING:
    from harness.app import Harness
    from harness.models import CaseSpec
    from harness.registry import Registry

#: What the check's folder holds.
INITIAL_STATE = "initial_state.npz"
TRACE = "trace.json"
FINAL_STATE = "final_state.npz"
#: The stored reference's trace and final state, copied into a check against it.
REFERENCE = "reference"

DEFAULT_STEPS = 10

#: Settings keys that may differ between the frameworks' resolved configs without making the
#: workload different (how long a run may take, where it came from).
_NOT_WORKLOAD = frozenset({"timeout_s", "hang_timeout_s", "rendezvous_timeout_s"})


@dataclass
class EquivalenceRequest:
    case: str
    frameworks: list[str]
    steps: int | None = None  # None: DEFAULT_STEPS, or the reference's
    vendor: str = "cpu"
    scale: str = "smoke"
    set_pairs: list[str] = field(default_factory=list)
    output: Path = Path("results")
    data_dir: Path | None = None
    cache_dir: Path | None = None
    wheelhouse: Path | None = None  # else HARNESS_WHEELHOUSE; None: the package indexes
    #: A stored check whose initial state every framework loads and whose trace of
    #: ``reference_framework`` is the reference (certification); None: the first framework's.
    reference_dir: Path | None = None
    reference_framework: str | None = None


def check_request(registry: Registry, request: EquivalenceRequest) -> CaseSpec:
    """The case, after checking that every framework implements the check for it (one-line
    errors naming what is valid)."""
    case = registry.cases.get(request.case)
    if len(set(request.frameworks)) != len(request.frameworks):
        raise UserInputError(f"--frameworks names a framework twice: {','.join(request.frameworks)}")
    if not request.frameworks:
        raise UserInputError("--frameworks names no framework")
    for name in request.frameworks:
        spec = registry.frameworks.get(name)
        registry.check_case_framework(case, name)
        if case.model not in spec.equivalence_models:
            able = sorted(f.name for f in registry.frameworks.items.values()
                          if case.model in f.equivalence_models)
            raise UserInputError(
                f"framework {name!r} does not implement the equivalence check for {case.model} "
                f"cases; frameworks that do: {', '.join(able) or 'none'}")
    return case


def run_equivalence(harness: Harness, request: EquivalenceRequest,
                    progress: Callable[[str], None] = lambda _m: None) -> EquivalenceResult:
    """Run every framework of ``request`` and compare each with the reference; the verdict is
    written to the check's folder before it is returned."""
    case = check_request(harness.registry, request)
    reference_trace: Trace | None = None
    reference_state = None
    if request.reference_dir is not None:
        reference_trace, reference_state, stored_initial = _stored_reference(request)
        recorded = len(reference_trace.losses)
        if request.steps is not None and request.steps != recorded:
            raise UserInputError(f"the reference in {request.reference_dir} recorded {recorded} "
                                 f"steps; compare {recorded} (leave --steps out)")
    steps = request.steps or (len(reference_trace.losses) if reference_trace else DEFAULT_STEPS)
    request = replace(request, steps=steps)
    check_dir = new_check_dir(request.output, case.name, create=False)
    # Every framework planned before anything is written: a bad --set fails here, in one line.
    initial = check_dir / INITIAL_STATE
    planned = [_plan(harness, request, case, framework, check_dir,
                     _setting(case, check_dir / framework, initial,
                              exports=request.reference_dir is None and index == 0))
               for index, framework in enumerate(request.frameworks)]
    check_dir.mkdir(parents=True)
    if request.reference_dir is not None:  # the check's folder is judged from its files alone
        _copy(stored_initial, check_dir / INITIAL_STATE)
        (check_dir / REFERENCE).mkdir()
        reference_name = request.reference_framework or reference_trace.framework
        for name in (TRACE, FINAL_STATE):
            _copy(request.reference_dir / reference_name / name, check_dir / REFERENCE / name)
    runs: list[FrameworkRun] = []
    traces: dict[str, Trace] = {}
    configs: dict[str, dict] = {}
    for framework, (context, run_request) in zip(request.frameworks, planned):
        exports = context.config.equivalence.export_state is not None
        progress(f"{framework}: training {request.steps} steps "
                 f"({'exports' if exports else 'loads'} the initial state)")
        run, trace, config = _run_framework(harness, context, run_request, check_dir, initial)
        runs.append(run)
        configs[framework] = config
        if trace is not None:
            traces[framework] = trace
        progress(f"{framework}: {run.status}" + (f" ({run.error})" if run.error else ""))
    if reference_trace is None:
        reference_name = request.frameworks[0]
        reference_trace = traces.get(reference_name)
        if reference_trace is not None:
            reference_state = load_state(check_dir / reference_name / FINAL_STATE)
        candidates = request.frameworks[1:]
    else:
        reference_name = request.reference_framework or reference_trace.framework
        candidates = request.frameworks
    pairs = []
    if reference_trace is not None:
        initial_state = load_state(initial)
        for name in candidates:
            if name in traces:
                state = load_state(check_dir / name / FINAL_STATE)
                pairs.append(compare_traces(reference_trace, traces[name],
                                            (initial_state, reference_state, state)))
    result = EquivalenceResult.build(
        case=case, request=request, reference=reference_name, runs=runs, pairs=pairs,
        config_differences=_config_differences(configs),
        trace_notes={name: t.notes for name, t in traces.items() if t.notes},
        folder=check_dir,
    )
    result.write(check_dir)
    return result


def _copy(source: Path, target: Path) -> None:
    import shutil

    shutil.copyfile(source, target)


def _stored_reference(request: EquivalenceRequest):
    folder = request.reference_dir
    initial = folder / INITIAL_STATE
    if not initial.is_file():
        raise UserInputError(f"--reference {folder}: no {INITIAL_STATE} there (give the folder of "
                             "a `harness equivalence` check)")
    names = sorted(p.parent.name for p in folder.glob(f"*/{TRACE}"))
    name = request.reference_framework or (names[0] if names else None)
    if name is None or not (folder / name / TRACE).is_file():
        raise UserInputError(f"--reference {folder}: no trace of {name or 'any framework'} there "
                             f"(it has {', '.join(names) or 'none'})")
    return read_trace(folder / name / TRACE), load_state(folder / name / FINAL_STATE), initial


def _setting(case: CaseSpec, folder: Path, initial: Path, exports: bool):
    """A framework's ``equivalence`` section: where it writes, whether it exports or loads."""
    from harness.models.config import EquivalenceSetting

    return EquivalenceSetting(
        trace=str(folder / TRACE), final_state=str(folder / FINAL_STATE),
        export_state=str(initial) if exports else None,
        initial_state=None if exports else str(initial), precision=case.equivalence_precision,
        growth=case.equivalence_growth, safety=case.equivalence_safety)


def _plan(harness: Harness, request: EquivalenceRequest, case: CaseSpec, framework: str,
          check_dir: Path, setting):
    from harness.runner.pipeline import RunRequest, plan

    case_settings = [f"{k}={v}" for k, v in case.equivalence_settings.items()]
    run_request = RunRequest(
        case=case.name, vendor=request.vendor, framework=framework, scale=request.scale,  # type: ignore[arg-type]
        nproc=1, nnodes=1, precision="fp32", max_steps=request.steps,
        # Every step is compared; step 1 also carries the check's own work (the state
        # exported or loaded, the first batch's checksums), so it is the warm-up a run's
        # throughput (and the core's timing of it) leaves out.
        set_pairs=[f"skip_steps={min(1, request.steps - 1)}", *case_settings, *request.set_pairs],
        output=check_dir / "runs",
        data_dir=request.data_dir, cache_dir=request.cache_dir, wheelhouse=request.wheelhouse,
        origins={k: "equivalence" for k in case.equivalence_settings},
    )
    context = plan(harness, run_request)
    # The plugins judge the check's run (a framework may train a check where it trains no
    # benchmark: Megatron-core on the CPU).
    context = context.model_copy(update={"config": context.config.model_copy(
        update={"equivalence": setting})})
    reasons = harness.router(context).unsupported_reasons(context)
    if reasons:
        raise UnavailableError(f"{framework}: " + "; ".join(reasons))
    return context, run_request


def _run_framework(harness: Harness, context, run_request, check_dir: Path, initial: Path):
    from harness.runner.pipeline import execute

    framework = context.framework
    folder = check_dir / framework
    folder.mkdir(parents=True, exist_ok=True)
    config = context.config
    exports = config.equivalence.export_state is not None
    workload = {"settings": config.settings.model_dump(exclude=_NOT_WORKLOAD), "params": config.params}
    if not exports and not initial.is_file():
        return (FrameworkRun(framework=framework, status="not run",
                             error="no initial state: the framework that exports it failed"),
                None, workload)
    try:
        report = execute(harness, context, run_request)
    except HarnessError as exc:
        return FrameworkRun(framework=framework, status="not run", error=str(exc)), None, workload
    result = report.result
    trace_path = folder / TRACE
    run = FrameworkRun(framework=framework, status=result.status, run_id=result.run_id,
                       framework_version=result.framework_version,
                       error=None if trace_path.is_file() else (
                           result.failure_reason or "the training script wrote no trace"))
    return run, (read_trace(trace_path) if trace_path.is_file() else None), workload


def _config_differences(configs: dict[str, dict]) -> list[str]:
    """Keys whose resolved value differs between the frameworks (a vendor config, say)."""
    if len(configs) < 2:
        return []
    names = list(configs)
    differences = []
    for part in ("settings", "params"):
        keys = set().union(*(configs[n][part] for n in names))
        for key in sorted(keys):
            values = {n: configs[n][part].get(key) for n in names}
            if len(set(map(repr, values.values()))) > 1:
                differences.append(f"{key}: " + ", ".join(f"{n} {v!r}" for n, v in values.items()))
    return differences
