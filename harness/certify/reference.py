"""``certify reference``: record the convergence bands of a suite's points.

Each point runs once per seed (the only setting that differs between the runs; each run also
trains on its own data order, as certified repeats do), outside certification (the seed is
locked there), and once with the suite's own seed; the losses at the checkpoints give the
band's centre (their mean) and width (their spread; ``convergence.make_reference``). The bands
are saved in the repository's reference folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from harness.certify import convergence, rules
from harness.certify.evaluate import reparse_run
from harness.certify.runner import CertifyObserver, CertifyRequest, run_request_for
from harness.certify.suite import Suite, plan_points
from harness.errors import HarnessError
from harness.runner.pipeline import run_benchmark

if TYPE_CHECKING:
    from harness.app import Harness


def record_references(harness: Harness, suite: Suite, vendor: str,
                      seeds: list[int], workdir: Path, only: list[str] | None = None,
                      folder: Path = convergence.REFERENCE_DIR,
                      observer: CertifyObserver | None = None, env_mode: str = "auto") -> list[Path]:
    observer = observer or CertifyObserver()
    registry = harness.registry
    registry.vendors.get(vendor)
    devices = harness.router().discover_devices(vendor)
    spec = suite.spec.suite
    points = [p for p in plan_points(suite, registry, devices.count) if not only or p.label in only]
    plans = []
    for point in points:
        case = registry.cases.get(point.case)
        locked_seed = rules.reference_config(case, point, vendor, spec.scale).settings.seed
        plans.append((point, locked_seed, sorted(set(seeds) | {locked_seed})))
    written = []
    total, done = sum(len(point_seeds) for _, _, point_seeds in plans), 0
    for point, locked_seed, point_seeds in plans:
        request = run_request_for(point, CertifyRequest(suite=suite, vendor=vendor, env_mode=env_mode),
                                  spec.scale, workdir / "runs", {})
        runs, result = {}, None
        for number, seed in enumerate(point_seeds, 1):
            done += 1
            observer.point(f"{point.label} seed {seed}", number, len(point_seeds), done, total)
            request.set_pairs = [p for p in request.set_pairs if not p.startswith("seed=")] + [f"seed={seed}"]
            report = run_benchmark(harness, request, observer)
            result = report.result
            if result.status != "success":
                raise HarnessError(f"reference run {result.run_id} ({point.label}, seed {seed}) "
                                   f"failed: {result.failure_reason}")
            if result.health is not None and result.health.status == "unhealthy":
                # A band drawn from a diverging curve would admit the same divergence.
                raise HarnessError(f"reference run {result.run_id} ({point.label}, seed {seed}) "
                                   f"trained unhealthily: {'; '.join(result.health.reasons)}; "
                                   "no band is recorded from it (docs/health.md)")
            runs[seed] = reparse_run(registry, workdir, result.run_id).losses
        written.append(convergence.save_reference(reference_from_runs(
            runs, locked_seed, point, spec.scale, result, vendor), folder))
    return written


def reference_from_runs(runs, center_seed: int, point, scale: str, result, vendor: str):
    """The band of one point from its reference runs (seed -> (step, loss) pairs)."""
    device = result.devices.devices[0].name if result.devices and result.devices.devices else "?"
    return convergence.make_reference(
        runs, center_seed=center_seed, case=point.case, scale=scale, framework=point.framework,
        precision=result.precision, global_batch_size=result.global_batch_size, max_steps=result.max_steps,
        checkpoints=list(point.checkpoints), window=point.checkpoint_window,
        recorded_on=f"{vendor}: {device}")
