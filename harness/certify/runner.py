"""``certify run``: run every point of a suite N times through the library, judge, bundle.

Each repeat is its own harness run (its own run folder, log, config and result), so one
failed repeat does not end the point and every repeat can be re-parsed on its own. The
rules are enforced before a point runs: a point whose resolved config breaks them (a vendor
config touching a locked key, say) is not run at all and fails the certification.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from harness import __version__
from harness.certify import bundle, equivalence_check, probe, rules, sysinfo
from harness.certify.evaluate import Evaluation, evaluate
from harness.certify.record import Certification, PointRecord
from harness.certify.report import write_certification_report
from harness.certify.scoring import OLYMPIC_MIN
from harness.certify.suite import Suite, plan_points, repeats_deviation
from harness.config_resolution import parse_set_pairs, relabel_request_values
from harness.errors import HarnessError, UnavailableError, UserInputError
from harness.results_io import atomic_write_text
from harness.runner.pipeline import RunObserver, RunRequest, execute, plan, replanned
from harness.runner.signals import (
    Terminated,
    deferred_signals,
    stop_signals_raise,
    terminated_exit_code,
    terminations_received,
)

if TYPE_CHECKING:
    from harness.app import Harness
    from harness.registry import Registry


@dataclass
class CertifyRequest:
    suite: Suite
    vendor: str
    output: Path = Path("certifications")
    repeats: int | None = None  # fewer than the suite asks for: recorded as a deviation
    set_pairs: list[str] | None = None
    framework: str | None = None
    private_key: object | None = None  # an Ed25519 private key, or None for an unsigned bundle
    cache_dir: Path | None = None
    env_mode: str = "auto"


#: The exit code of a certification that Ctrl-C stopped (SIGTERM/SIGHUP: 128 + the signal).
EXIT_INTERRUPTED = 130


@dataclass
class CertifyOutcome:
    certification: Certification
    folder: Path
    bundle_path: Path
    stop_exit_code: int | None = None  # set when a stop signal ended the certification early


class CertifyObserver(RunObserver):
    """Progress of a certification; ``point`` is called before each repeat."""

    def point(self, label: str, repeat: int, repeats: int, index: int, total: int) -> None:
        pass


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


def run_certification(harness: Harness, request: CertifyRequest,
                      observer: CertifyObserver | None = None) -> CertifyOutcome:
    observer = observer or CertifyObserver()
    spec = request.suite.spec.suite
    registry = harness.registry
    registry.vendors.get(request.vendor)
    router = harness.router()
    devices = router.discover_devices(request.vendor)
    points = plan_points(request.suite, registry, devices.count, request.framework)
    set_pairs = parse_set_pairs(request.set_pairs or [])
    rules.refuse_set_pairs(set_pairs, [registry.cases.get(p.case) for p in points])

    repeats = request.repeats or spec.repeats
    if repeats < OLYMPIC_MIN:
        raise UserInputError(f"--repeats {repeats}: olympic scoring needs at least {OLYMPIC_MIN} repeats")
    fewer = repeats_deviation(repeats, spec)
    deviations = [fewer] if fewer else []
    if request.framework:
        deviations.append(f"framework {request.framework} chosen on the command line")

    started = _utcnow()
    cert_id = f"certify-{spec.name}-{request.vendor}-{started.strftime('%Y%m%d-%H%M%S')}"
    folder = (request.output / cert_id).resolve()
    equivalence = equivalence_check.request_for(request.suite, registry, request.vendor,
                                                request.framework, folder, request.cache_dir)
    runs_dir = folder / "runs"
    runs_dir.mkdir(parents=True, exist_ok=False)
    atomic_write_text(folder / "suite.toml", request.suite.text)

    records = [PointRecord.of(point) for point in points]
    planned = _plan_points(harness, router, request, points, records, spec, runs_dir, set_pairs)
    _probe_peaks(harness, planned, observer)
    results: list = []
    stop = _run_interleaved(harness, planned, repeats, results, observer)
    if equivalence is not None and stop is None:
        total = len(planned) * repeats
        observer.point(f"equivalence {equivalence.case}", 1, 1, total, total)
        equivalence_check.run_requirement(harness, equivalence, folder)
    # Whatever signals arrive now, what ran is judged, reported and bundled.
    with deferred_signals():
        return _conclude_run(harness, request, spec, folder, cert_id, started, records, results,
                             repeats, set_pairs, deviations, stop)


@dataclass
class _PlannedRun:
    record: PointRecord
    context: object  # RunContext of the point's first repeat
    run_request: RunRequest


def _plan_points(harness, router, request, points, records, spec, runs_dir, set_pairs) -> list[_PlannedRun]:
    """Plan each point once and check its rules; a point that breaks one (or cannot run here)
    is recorded as refused and not run."""
    planned = []
    for point, record in zip(points, records):
        case = harness.registry.cases.get(point.case)
        run_request = run_request_for(point, request, spec.scale, runs_dir, set_pairs)
        try:
            context = plan(harness, run_request)
        except UnavailableError as exc:  # e.g. the memory planner: nothing fits this device
            record.refused = f"cannot run on this machine: {exc}"
            continue
        except HarnessError as exc:
            record.refused = f"config does not resolve: {exc}"
            continue
        # A vendor config that sets a locked key never gets here: resolve_config refuses it.
        reference = rules.reference_config(case, point, request.vendor, spec.scale)
        verdict = rules.check_rules(case, context.config, reference, point.label)
        if not verdict.passed:
            record.refused = verdict.reason
            continue
        # Asked once per point, not once per repeat: an answer may be costly, and repeats of one
        # plan must not be judged differently.
        unsupported = router.unsupported_reasons(context)
        if unsupported:
            record.refused = f"cannot run on this machine: {'; '.join(unsupported)}"
            continue
        planned.append(_PlannedRun(record, suite_sourced(context, point, spec.name), run_request))
    return planned


def _probe_peaks(harness, planned: list[_PlannedRun], observer: CertifyObserver) -> None:
    """Measure each framework's device at each precision and process count once
    (``probe.measure``) and record it in the points that run them."""
    measured: dict[tuple[str, str, int], object] = {}
    for item in planned:
        settings = item.context.config.settings  # per process count: the vendor's share may differ
        key = (item.context.framework, settings.precision, settings.nproc)
        if key not in measured:
            try:
                measured[key] = probe.measure(harness, item.context, observer)
            except HarnessError as exc:
                item.record.errors.append(f"matmul probe: {exc}")
                continue
        item.record.probe = measured[key]


def _run_interleaved(harness, planned: list[_PlannedRun], repeats: int, results: list,
                     observer: CertifyObserver) -> BaseException | None:
    """Run repeat 1 of every point, then repeat 2 of every point, and so on: a neighbour's
    burst of load then falls on one repeat of several points rather than on every repeat of
    one. Each repeat is its own run of its point's plan (a run id and folder of its own).
    Returns the stop signal's exception (SIGINT, SIGTERM, SIGHUP) that ended it early, if any:
    the runs that finished are kept."""
    total = len(planned) * repeats
    index = 0
    with stop_signals_raise():
        try:
            for repeat in range(1, repeats + 1):
                for item in planned:
                    index += 1
                    observer.point(item.record.label, repeat, repeats, index, total)
                    if repeat > 1:
                        item.context = replanned(item.context)
                    terminations = terminations_received()
                    try:
                        report = execute(harness, item.context, item.run_request, observer,
                                         unsupported=[])
                    except HarnessError as exc:
                        item.record.errors.append(f"repeat {repeat}: {exc}")
                        continue
                    item.record.run_ids.append(report.result.run_id)
                    results.append(report.result)
                    status = report.result.status
                    if status == "interrupted":
                        return KeyboardInterrupt()
                    if status == "terminated" and terminations_received() > terminations:
                        # This process was told to stop (not a training process killed from
                        # outside, which is this repeat's failure only).
                        return Terminated(terminated_exit_code() - 128)
        except KeyboardInterrupt as exc:  # between two runs: nothing of the next one ran
            return exc
        except Terminated as exc:
            return exc
    return None


def _conclude_run(harness, request, spec, folder, cert_id, started, records, results, repeats,
                  set_pairs, deviations, stop) -> CertifyOutcome:
    description = sysinfo.collect(harness, results)
    atomic_write_text(folder / "system.json", json.dumps(description, indent=2, default=str) + "\n")
    cert = Certification(
        id=cert_id, suite=spec.name, suite_source=request.suite.source,
        suite_sha256=request.suite.sha256, vendor=request.vendor, scale=spec.scale,
        repeats=repeats, suite_repeats=spec.repeats, set_pairs=set_pairs, deviations=deviations,
        harness_version=__version__, started_at=started, points=records,
        stopped=_stopped_reason(stop, records, repeats),
    )
    _write(folder, cert)
    evaluation = conclude(folder, harness.registry, cert)
    write_certification_report(folder, evaluation.evidence)
    out = bundle.write_bundle(folder, folder.with_name(folder.name + ".tar.gz"), request.private_key)
    return CertifyOutcome(certification=cert, folder=folder, bundle_path=out,
                          stop_exit_code=_stop_exit_code(stop))


def _stopped_reason(stop: BaseException | None, records: list[PointRecord], repeats: int) -> str | None:
    if stop is None:
        return None
    ran = sum(len(r.run_ids) for r in records)
    how = "interrupted by the user (SIGINT)" if isinstance(stop, KeyboardInterrupt) else str(stop)
    return f"{how} after {ran} of {len(records) * repeats} runs; the runs that finished are kept"


def _stop_exit_code(stop: BaseException | None) -> int | None:
    if stop is None:
        return None
    return stop.exit_code if isinstance(stop, Terminated) else EXIT_INTERRUPTED


def conclude(folder: Path, registry: Registry, cert: Certification) -> Evaluation:
    """Evaluate the folder and write the verdict into certification.json."""
    evaluation = evaluate(folder, registry)
    cert.summaries = evaluation.summaries
    cert.checks = evaluation.checks
    cert.passed = evaluation.passed
    cert.finished_at = cert.finished_at or _utcnow()
    _write(folder, cert)
    return evaluation


def _write(folder: Path, cert: Certification) -> None:
    atomic_write_text(folder / "certification.json", cert.model_dump_json(indent=2) + "\n")


def suite_sourced(context, point, suite_name: str):
    """Name the suite as the source of the settings it fixes: the library receives them as
    command-line settings, but they are the suite's, so its runs are not marked ``modified``
    for keeping the suite's measurement window."""
    context.config.sources = relabel_request_values(
        context.config.sources, dict.fromkeys(point.settings, f"suite:{suite_name}"))
    return context


def run_request_for(point, request: CertifyRequest, scale: str, runs_dir: Path,
                    set_pairs: dict[str, str]) -> RunRequest:
    """The library request of one repeat: the suite's step count as ``max_steps``, its other
    fixed settings and the vendor's ``--set`` tuning as set pairs, one repeat per run."""
    suite_settings = dict(point.settings)
    max_steps = suite_settings.pop("max_steps", None)
    pairs = [f"{k}={v}" for k, v in suite_settings.items()] + [f"{k}={v}" for k, v in set_pairs.items()]
    return RunRequest(
        case=point.case, vendor=request.vendor, framework=point.framework,
        scale=scale,  # type: ignore[arg-type]
        nproc=point.nproc, nnodes=point.nnodes, precision=point.precision,
        max_steps=int(max_steps) if max_steps is not None else None,
        set_pairs=pairs, repeat=1, output=runs_dir, cache_dir=request.cache_dir,
        env_mode=request.env_mode,  # type: ignore[arg-type]
    )
