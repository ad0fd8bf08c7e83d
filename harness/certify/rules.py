"""The rules a certification enforces on configs: what a vendor may tune, what is locked.

The suite fixes the reference config of each point (case defaults, the scale preset, the
suite's own settings). A certified run may differ from it only in keys the case lets
vendors tune (``CaseSpec.vendor_overridable``, and the framework build every vendor chooses,
``framework_requirement``) and never in the measurement window
(``harness.measurement_window``). The same function judges a config before it runs and
again, from the bundle, when it is verified.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from harness.certify.checks import Check, failed, passed
from harness.config_resolution import resolve_config, vendor_settable
from harness.errors import UserInputError
from harness.measurement_window import LOCKED_KEYS, locked_differences, locked_keys_touched
from harness.models import ResolvedConfig

if TYPE_CHECKING:
    from harness.certify.suite import PlannedPoint
    from harness.models import CaseSpec

#: Limits of the run, not of the work (the config hash leaves them out too).
_IGNORED = frozenset({"timeout_s", "hang_timeout_s", "rendezvous_timeout_s"})


def refuse_set_pairs(pairs: dict[str, str], cases: list[CaseSpec]) -> None:
    """``--set`` in certify mode: locked keys are refused, and so is any key a case of the
    suite does not let vendors tune (exit 2, one line)."""
    locked = locked_keys_touched(pairs)
    if locked:
        raise UserInputError(
            f"--set {', '.join(locked)}: locked in certification (the measurement window, "
            f"learning rate, data and seed belong to the suite: {', '.join(sorted(LOCKED_KEYS))})"
        )
    for case in cases:
        tunable = tunable_keys(case)
        for key in pairs:
            if key not in tunable:
                raise UserInputError(
                    f"--set {key}: case {case.name!r} does not let vendors tune it in "
                    f"certification (tunable: {', '.join(sorted(tunable))})"
                )


def tunable_keys(case: CaseSpec) -> frozenset[str]:
    return vendor_settable(case) - LOCKED_KEYS


def reference_config(case: CaseSpec, point: PlannedPoint, vendor: str, scale: str) -> ResolvedConfig:
    """The config the suite prescribes for a point, before any vendor tuning."""
    cli = {"nproc": point.nproc, "nnodes": point.nnodes}
    if point.precision:
        cli["precision"] = point.precision
    return resolve_config(case, framework=point.framework, vendor=vendor, scale=scale,
                          cli_settings=cli,
                          cli_set={k: str(v) if not isinstance(v, str) else v
                                   for k, v in point.settings.items()})


def _flat(config: ResolvedConfig) -> dict[str, Any]:
    settings, params = config.settings.model_dump(), dict(config.params)
    for computed in ("world_size", "run_mode", "global_batch_size"):
        settings.pop(computed, None)
    return {**settings, **params}


def check_rules(case: CaseSpec, actual: ResolvedConfig,
                reference: ResolvedConfig, label: str) -> Check:
    """Pass when ``actual`` differs from ``reference`` only in keys vendors may tune."""
    got, want = _flat(actual), _flat(reference)
    locked = locked_differences(actual, reference)
    if locked:
        what = ", ".join(f"{k}={a!r} (suite: {b!r})" for k, a, b in
                         ((k, v[0], v[1]) for k, v in locked.items()))
        return failed("rules", f"locked keys differ from the suite: {what}", label)
    tunable = tunable_keys(case)
    differing = sorted(k for k in set(got) | set(want)
                       if k not in _IGNORED and got.get(k) != want.get(k))
    not_allowed = [k for k in differing if k not in tunable]
    if not_allowed:
        what = ", ".join(f"{k}={got.get(k)!r} (suite: {want.get(k)!r})" for k in not_allowed)
        return failed("rules", f"keys vendors may not tune differ from the suite: {what}", label)
    tuned = ", ".join(f"{k}={got.get(k)!r}" for k in differing) or "none"
    return passed("rules", f"measurement window as the suite; vendor-tuned keys: {tuned}", label)
