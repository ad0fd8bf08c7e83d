"""Case defaults < vendor per-case config < ``--scale smoke`` preset < CLI overrides."""

from __future__ import annotations

import math

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from harness.errors import HarnessError, UserInputError, did_you_mean, first_validation_error
from harness.measurement_window import LOCKED_KEYS, locked_keys_touched
from harness.models import CaseSpec, ResolvedConfig, RunSettings
from harness.models.case import ParamValue
from harness.models.config import VENDOR_SETTINGS

if TYPE_CHECKING:
    from harness.models.vendor_config import VendorCaseConfig

SETTINGS_KEYS = frozenset(RunSettings.model_fields)
#: Source of the values a run request carries (ResolvedConfig.sources documents the labels).
CLI_SOURCE = "cli"
#: Prefix of the source of a sweep file's values: ``sweep:<file name>``.
SWEEP_SOURCE = "sweep:"
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def parse_set_pairs(pairs: list[str]) -> dict[str, str]:
    """``["a=1", "b=x"]`` -> ``{"a": "1", "b": "x"}``, rejecting malformed items."""
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserInputError(f"--set expects key=value, got {pair!r}")
        result[key.strip()] = value.strip()
    return result


def vendor_settable(case: CaseSpec) -> frozenset[str]:
    """What a vendor config may set for ``case``: the tuning knobs the case lets vendors
    override, and the settings of the software every vendor chooses for its devices."""
    return frozenset(case.vendor_overridable) | VENDOR_SETTINGS


def setting_text(value: str | int | float | bool) -> str:
    """A setting's value as ``--set key=value`` writes it (booleans as ``true``/``false``, which
    :func:`convert_param` reads back)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def set_by_user(source: str) -> bool:
    """Whether a value came from whoever ran it (the command line or a sweep file), not from
    the case, its smoke preset, a vendor config, a suite or the planner."""
    return source == CLI_SOURCE or source.startswith(SWEEP_SOURCE)


def relabel_request_values(sources: Mapping[str, str], labels: Mapping[str, str]) -> dict[str, str]:
    """``sources`` with the request's values (``cli``) of the keys in ``labels`` named after
    where they really came from (a sweep file, a certification suite): the request carries
    them all alike, whoever set them."""
    return {key: labels.get(key, source) if source == CLI_SOURCE else source
            for key, source in sources.items()}


def convert_param(key: str, raw: Any, default: ParamValue) -> ParamValue:
    """Convert a CLI string to the type of the case's default value."""
    if not isinstance(raw, str):
        return raw
    kind = type(default)
    try:
        if kind is bool:
            lowered = raw.lower()
            if lowered in _TRUE:
                return True
            if lowered in _FALSE:
                return False
            raise ValueError
        if kind is int:
            return int(raw)
        if kind is float:
            return float(raw)
    except ValueError:
        raise UserInputError(
            f"--set {key}={raw!r}: expected a value of type {kind.__name__} (default {default!r})"
        ) from None
    return raw


#: The range of a numeric parameter the case gives none: hyper-parameters are counts, sizes,
#: rates and coefficients, none of them negative.
DEFAULT_PARAM_RANGE: tuple[float | None, float | None] = (0, None)
#: What an integer parameter may hold: the training scripts' integers are 64-bit.
INT64_MAX = 2**63 - 1


def check_param_ranges(case: CaseSpec, params: Mapping[str, ParamValue]) -> None:
    """Refuse, before launch, a numeric parameter that is not finite or outside its range."""
    for key, value in params.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        low, high = case.ranges.get(key, DEFAULT_PARAM_RANGE)
        if isinstance(value, int) and abs(value) > INT64_MAX:
            high = INT64_MAX if high is None else min(high, INT64_MAX)
        if not math.isfinite(value) or (low is not None and value < low) or (high is not None and value > high):
            valid = (f"{'-inf' if low is None else f'{low:g}'} to "
                     f"{'inf' if high is None else f'{high:g}'}")
            raise UserInputError(f"invalid value for {key!r}: {value!r}; valid: a finite number "
                                 f"from {valid} (case {case.name!r})")


#: Python type of a parameter's default -> the TOML value types accepted for it (TOML is typed,
#: so unlike a --set string a vendor config's "8" for an integer is a mistake, not a spelling).
_ACCEPTED = {bool: (bool,), int: (int,), float: (int, float), str: (str,)}
_TYPE_NAMES = {bool: "a boolean (true/false)", int: "an integer", float: "a number", str: "a string"}
_TOML_NAMES = {bool: "a boolean", int: "an integer", float: "a float", str: "a string"}


def check_vendor_value_types(case: CaseSpec, vendor_config: VendorCaseConfig) -> None:
    """Each value of a vendor config has the type of what it overrides: a RunSettings field
    (validated strictly, as pydantic states it) or the case's parameter (the type of its
    default). Raises a one-line error naming the file, the key and the expected type."""
    where = vendor_config.path or vendor_config.name
    for key, value in vendor_config.values.items():
        if key in SETTINGS_KEYS:
            try:
                RunSettings.model_validate({key: value}, strict=True)
            except ValidationError as exc:
                _, message, _ = first_validation_error(exc)
                raise HarnessError(f"vendor config {where}: {key} = {value!r}: {message}") from None
            continue
        kind = type(case.params[key])
        accepted = _ACCEPTED.get(kind, (kind,))
        if type(value) not in accepted:  # type(), not isinstance: true is no integer here
            raise HarnessError(
                f"vendor config {where}: {key} = {value!r} is {_TOML_NAMES.get(type(value), 'a value')};"
                f" expected {_TYPE_NAMES.get(kind, kind.__name__)} (case {case.name!r} defaults it "
                f"to {case.params[key]!r})")


def resolve_config(
    case: CaseSpec,
    *,
    framework: str,
    vendor: str,
    scale: str = "full",
    vendor_config: VendorCaseConfig | None = None,
    cli_settings: dict[str, Any] | None = None,
    cli_set: dict[str, str] | None = None,
    layout: dict[str, tuple[Any, str | None]] | None = None,
) -> ResolvedConfig:
    """Merge the layers and validate the result; errors name the bad key and the valid ones.

    ``layout`` holds what the planner decided for the process layout (``nproc``, ``nnodes``),
    each value with where it came from: ``cli``, ``devices:<vendor>``, ``slurm`` (the Slurm
    step's node count), or None for the case's own default (which, like every default, gets
    no entry in ``sources``). It is applied with the precedence of the command line's options
    (below ``--set``): the vendor config was chosen for exactly this layout.
    """
    settings: dict[str, Any] = dict(case.settings)
    params: dict[str, ParamValue] = dict(case.params)
    sources: dict[str, str] = {}
    valid_keys = SETTINGS_KEYS | set(params)

    def apply(values: dict[str, Any], source: str, *, check_immutable: bool) -> None:
        for key, value in values.items():
            if key not in valid_keys:
                raise UserInputError(
                    f"{source}: unknown key {key!r} for case {case.name!r}. "
                    + did_you_mean(key, valid_keys)
                )
            if check_immutable and key in case.immutable:
                raise UserInputError(
                    f"{source}: {key!r} identifies case {case.name!r} and cannot be overridden. "
                    f"Immutable keys: {', '.join(sorted(case.immutable))}."
                )
            if key in SETTINGS_KEYS:
                settings[key] = value
            else:
                params[key] = convert_param(key, value, params[key])
            sources[key] = source

    if vendor_config is not None:
        where = vendor_config.path or vendor_config.name
        unknown = sorted(set(vendor_config.values) - valid_keys)
        settable = vendor_settable(case)
        if unknown:  # most likely misspelt: suggest among the keys a vendor may set
            raise HarnessError(
                f"vendor config {where}: unknown key {unknown[0]!r} for case {case.name!r}. "
                + did_you_mean(unknown[0], settable if case.vendor_overridable else valid_keys)
            )
        locked = locked_keys_touched(vendor_config.values)
        if locked:  # whatever the case allows: the figure's window is the case's, not the vendor's
            raise UserInputError(
                f"vendor config {where} sets {', '.join(locked)}, part of the measurement window "
                f"no vendor may change (allowed: {', '.join(sorted(settable - LOCKED_KEYS))})"
            )
        not_allowed = sorted(set(vendor_config.values) - settable)
        if not_allowed:
            raise HarnessError(
                f"vendor config {where} sets {', '.join(not_allowed)}, which case "
                f"{case.name!r} does not let vendors override (allowed: {', '.join(sorted(settable))})"
            )
        check_vendor_value_types(case, vendor_config)
        apply(vendor_config.values, f"vendor:{vendor_config.name}", check_immutable=False)
    if scale == "smoke":
        apply(case.smoke, "smoke", check_immutable=False)
    apply({k: v for k, v in (cli_settings or {}).items() if v is not None}, CLI_SOURCE,
          check_immutable=True)
    for key, (value, source) in (layout or {}).items():
        apply({key: value}, source or "case", check_immutable=source == CLI_SOURCE)
        if source is None:
            del sources[key]
    apply(cli_set or {}, CLI_SOURCE, check_immutable=True)

    check_param_ranges(case, params)
    for key, allowed in case.choices.items():
        if key in params and params[key] not in allowed:
            raise UserInputError(
                f"invalid value for {key!r}: {params[key]!r}. Valid values: {', '.join(allowed)}."
            )
    try:
        run_settings = RunSettings(**settings)
    except ValidationError as exc:
        key, message, value = first_validation_error(exc)
        raise UserInputError(f"invalid value for {key!r}: {message} (got {value!r})") from None
    return ResolvedConfig(
        case=case.name,
        model=case.model,
        framework=framework,
        vendor=vendor,
        scale=scale,  # type: ignore[arg-type]
        hardware_config=vendor_config.name if vendor_config else None,
        settings=run_settings,
        params=params,
        sources=sources,
    )
