"""The check of a vendor's declared peak against what its device does.

MFU divides the model FLOP/s by the vendor's ``device_peak_flops``: a vendor that declares a
lower peak than its device has raises every MFU it reports. Before the runs, certification
measures the device's dense matmul rate with a short probe through the framework itself
(``matmul_probe``: a second or two of large matmuls at the run's precision, best window) and
records it beside the declared peak and the plugin that declared it. A point fails when

- the device ran matmuls faster than its declared peak allows (``probe > peak x (1 +
  PROBE_MARGIN)``): the peak is understated, every MFU against it inflated; or
- a run's MFU exceeds what the probe allows (``mfu > probe / peak x (1 + PROBE_MARGIN)``):
  the model would have run faster than the device's own dense matmuls.

The margin covers the probe's own noise and a run's kernels outdoing the probe's single
matmul shape; it is no licence to tune: an honest datasheet peak lies above the probe.

The probe is a lower bound on the device's rate, and both rules need it close to the device's
own, also on a machine shared with other work:

- it runs as one training process of the point runs: with the variables the vendor's ``run``
  wrapper gives that process (its threads, its visible devices), so a device of one core is
  probed on one core, not on the whole host. They are recorded, and a point fails whose runs
  were launched with others (a wrapper that gave the probe fewer threads than the runs);
- on a CPU device its windows are timed by the busiest thread's CPU time, not the wall clock
  (``matmul_probe.py``): a neighbour holding the core slows the wall clock 2-3x on a busy
  2-core machine, which made honest runs' MFU exceed the slowed probe's share and let a peak
  lowered 4x pass as within the margin. Its best window is taken.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from harness.certify.checks import Check, failed, passed
from harness.models import ExecutionEnv, MatmulRate

if TYPE_CHECKING:
    from harness.app import Harness
    from harness.models import BenchmarkResult

#: How far a measured matmul rate may exceed the declared peak, and a run's MFU the probe's
#: share of the peak, before the point fails (relative).
PROBE_MARGIN = 0.25


class PeakProbe(BaseModel):
    """What certification measured of one framework's device at one precision, and what the
    vendor declared for it."""

    framework: str
    precision: str
    rate: MatmulRate | None = Field(None, description="The probe's measurement; None: the framework has no probe.")
    declared_peak: float | None = Field(None, description="The vendor's device_peak_flops at the precision.")
    peak_source: str | None = Field(
        None, description="Who declared it: the vendor's plugin, its distribution and version.")
    margin: float = PROBE_MARGIN
    variables: dict[str, str] = Field(
        default_factory=dict,
        description="The variables the vendor's run wrapper gave the probe's process, of those "
                    "its device backend declares (threads, visible devices); each run of the "
                    "points it bounds must have been launched with the same.")


def measure(harness: Harness, context, observer=None) -> PeakProbe:
    """Probe the device of ``context``'s run (its framework, vendor and precision)."""
    from harness.runner.attempt import allowed_launch_env

    router = harness.router(context)
    precision = context.config.settings.precision
    if observer is not None:
        observer.stage("probe", f"dense matmul rate, {context.framework} {precision}")
    env = _one_process_env(router, context, router.prepare_env(context))
    rate = router.matmul_probe(context, env)
    declared = allowed_launch_env(harness, context.vendor)
    peak = router.device_peak_flops(context.devices, precision)
    owner = router.vendor_owner(context.vendor)
    info = harness.plugins.get(owner)
    source = f"device_peak_flops of {owner}" + (f" ({info.distribution} {info.version})" if info else "")
    return PeakProbe(framework=context.framework, precision=precision, rate=rate,
                     declared_peak=peak, peak_source=source if peak is not None else None,
                     variables={k: v for k, v in env.env.items() if k in declared})


def _one_process_env(router, context, env: ExecutionEnv) -> ExecutionEnv:
    """``env`` with the variables one training process of the point gets: the framework's launch
    as the vendor's ``run`` wrapper returns it (threads, visible devices, runtime knobs), less
    the interpreter's and the loader's. The probe then measures that process's device, not the
    whole host (one examplechip is one core: its run gives each process one thread). ``env``
    as it is where there is no launch to take them from before the run."""
    from harness.models.device import UNDECLARABLE_ENV_PREFIXES

    dataset = router.prepare_data(context)  # the runs need it too; a failure here is theirs
    try:
        launch = router.run(context, env, dataset)
    except Exception as exc:  # noqa: BLE001 - a wrapper that needs the run's folder, not yet made
        logging.getLogger(__name__).warning("matmul probe: the launch's variables are unknown "
                                            "before the run (%s); the probe runs without them", exc)
        return env
    if launch is None:
        return env
    variables = {name: value for name, value in launch.env.items()
                 if not name.upper().startswith(UNDECLARABLE_ENV_PREFIXES)}
    return env.model_copy(update={"env": variables})


def _launched_otherwise(variables: dict[str, str], results: list) -> tuple[str, str, str] | None:
    """(the probe's variable, a run, its value there) for the first run whose recorded launch
    differs from the probe's process in a variable the vendor gave the probe; None if none."""
    for result in results:
        provenance = getattr(result, "provenance", None)
        for launch in (provenance.launches if provenance is not None else [])[:1]:
            for name, value in sorted(variables.items()):
                if launch.env.get(name) != value:
                    return (f"{name}={value}", f"run {result.run_id}",
                            f"{name}={launch.env.get(name, '(unset)')}")
    return None


def check(probe: PeakProbe, results: list[BenchmarkResult], point: str) -> Check:
    """The ``flops`` check of one point: its declared peak and its runs' MFU against the probe."""
    if probe.rate is None:
        return passed("flops", f"no matmul probe for {probe.framework}: the declared peak is not "
                               "checked and MFU not bounded", point)
    other = _launched_otherwise(probe.variables, results)
    if other:
        return failed("flops", f"the probe ran with {other[0]}, {other[1]} was launched with "
                               f"{other[2]}: the vendor's run wrapper must give the probe what it "
                               "gives a training process of the point", point)
    measured = probe.rate.flops_per_s
    what = f"dense {probe.rate.dtype} matmuls ran at {measured / 1e12:.3g} TFLOP/s on {probe.rate.device}"
    if probe.declared_peak is None:
        return passed("flops", f"{what}; no declared peak, so no MFU", point)
    peak = probe.declared_peak
    if measured > peak * (1 + probe.margin):
        return failed("flops", f"{probe.peak_source} declares a peak of {peak / 1e12:.3g} TFLOP/s, "
                               f"but {what} ({measured / peak:.1f}x the declared peak): the peak is "
                               "understated and every MFU against it inflated", point)
    allowed = measured / peak * (1 + probe.margin)
    mfus = [r.efficiency.mfu for r in results
            if r.status == "success" and r.efficiency and r.efficiency.mfu is not None]
    above = [m for m in mfus if m > allowed]
    if above:
        return failed("flops", f"MFU {max(above):.1%} against the declared peak exceeds the "
                               f"{allowed:.1%} the probe allows ({what}, "
                               f"{measured / peak:.1%} of the declared peak)", point)
    return passed("flops", f"{what}, {measured / peak:.1%} of the declared peak "
                           f"({probe.peak_source}); MFU at most {allowed:.1%} allowed", point)
