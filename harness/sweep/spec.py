"""Sweep definitions: TOML files and command-line lists, expanded into run points.

A sweep file::

    [sweep]                      # defaults for every run, and the sweep's name
    name = "ngc_bert_base"
    vendor = "nvidia"

    [matrix]                     # the cartesian product of these axes
    case = ["bert_base_seq128"]
    nproc = [1, 8]
    column = [                   # an axis whose values are tables sets several fields at once
      { precision = "fp32", micro_batch_size = 32 },
      { precision = "fp16", micro_batch_size = 64 },
    ]

    [[group]]                    # optional: named sub-matrices (e.g. the Megatron DP/MP/2D/PP
    name = "DP"                  # groups); each is the product of [matrix] and its own matrix
    [group.matrix]
    layout = [{ case = "DP_1x1x1_2_1536x16", nnodes = 1, nproc = 1 }]

Run fields: see ``RUN_FIELDS``. An axis named after a field lists values of that field; any
other axis name lists tables of fields (a "bundle"), so coupled values such as the seeds'
``FP32(BS=32) | AMP(BS=64)`` columns stay coupled. ``batch_size``, the field's earlier name,
is read as ``micro_batch_size`` (``FIELD_ALIASES``).
"""

from __future__ import annotations

import itertools
import tomllib
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from harness.config_resolution import setting_text
from harness.errors import UserInputError, first_validation_error
from harness.models.config import Precision

ScalarValue = Union[bool, int, float, str]

# Fields a sweep point may set, with the RunRequest field each one feeds.
RUN_FIELDS = (
    "case", "framework", "vendor", "scale", "nproc", "nnodes", "precision", "micro_batch_size",
    "max_steps", "repeat", "hardware_config", "set", "label",
)
AXIS_FIELDS = ("case", "framework", "vendor", "scale", "nproc", "nnodes", "precision",
               "micro_batch_size", "max_steps", "repeat", "hardware_config", "label")
#: Earlier names of run fields that sweep files may still use: name -> the field it is.
FIELD_ALIASES = {"batch_size": "micro_batch_size"}


class SweepPoint(BaseModel):
    """One run of a sweep, before it is resolved against the plugins."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    case: str | None = None
    framework: str | None = None
    vendor: str | None = None
    scale: Literal["full", "smoke"] | None = None
    nproc: int | None = Field(None, ge=1)
    nnodes: int | None = Field(None, ge=1)
    precision: Precision | None = None
    micro_batch_size: int | None = Field(None, ge=1)
    max_steps: int | None = Field(None, ge=1)
    repeat: int | None = Field(None, ge=1)
    hardware_config: str | None = None
    set: tuple[tuple[str, ScalarValue], ...] = Field(
        default=(), description="Extra overrides (key, value), like --set key=value.")
    label: str | None = Field(None, description="Name of this run in layout tables, e.g. a config.")
    group: str | None = Field(None, description="The [[group]] this point came from.")

    @field_validator("set", mode="before")
    @classmethod
    def _set_as_pairs(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return tuple(sorted(value.items()))
        return value

    def merged(self, values: dict[str, Any]) -> SweepPoint:
        """This point with ``values`` laid over it; ``set`` tables are merged key by key."""
        data = self.model_dump(exclude_none=True)
        for key, value in values.items():
            if key == "set":
                combined = dict(data.get("set", ()))
                combined.update(dict(value) if not isinstance(value, dict) else value)
                data["set"] = combined
            else:
                data[key] = value
        return SweepPoint.model_validate(data)

    def set_pairs(self) -> list[str]:
        """``set`` as ``key=value`` strings, the form ``--set`` takes."""
        return [f"{key}={setting_text(value)}" for key, value in self.set]

    def describe(self) -> str:
        parts = [self.case or "?", self.framework or "default framework"]
        if self.label:
            parts.append(self.label)
        layout = f"{self.nnodes or 1}x{self.nproc}" if self.nproc else None
        if layout:
            parts.append(f"nproc {self.nproc}" if (self.nnodes or 1) == 1 else f"{layout} procs")
        if self.precision:
            parts.append(self.precision)
        if self.micro_batch_size:
            parts.append(f"bs {self.micro_batch_size}")
        return ", ".join(parts)


class SweepGroup(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    defaults: dict[str, Any] = Field(default_factory=dict)
    matrix: dict[str, Any] = Field(default_factory=dict)


class SweepSpec(BaseModel):
    """A parsed sweep: defaults, a matrix, optional groups."""

    model_config = ConfigDict(extra="forbid")

    name: str = "sweep"
    description: str = ""
    source: str = Field("", description="Where the matrix comes from (e.g. a seed document).")
    defaults: dict[str, Any] = Field(default_factory=dict)
    matrix: dict[str, Any] = Field(default_factory=dict)
    groups: list[SweepGroup] = Field(default_factory=list)

    def expand(self) -> list[SweepPoint]:
        """Every run point, in file order, without duplicates."""
        base = _point(SweepPoint(), self.defaults, f"sweep {self.name!r} [sweep]")
        points: list[SweepPoint] = []
        if not self.groups:
            points = _product(base, self.matrix, f"sweep {self.name!r}")
        for group in self.groups:
            start = _point(base, {**group.defaults, "group": group.name}, f"group {group.name!r}")
            axes = {**self.matrix, **group.matrix}
            points.extend(_product(start, axes, f"group {group.name!r}"))
        return _unique(points)


def _point(base: SweepPoint, values: dict[str, Any], where: str) -> SweepPoint:
    values = _canonical_names(values, where)
    unknown = sorted(set(values) - set(RUN_FIELDS) - {"group"})
    if unknown:
        raise UserInputError(
            f"{where}: unknown field(s) {', '.join(unknown)}; valid: {', '.join(RUN_FIELDS)}")
    if "set" in values and not isinstance(values["set"], (dict, tuple)):
        raise UserInputError(f"{where}: 'set' must be a table of key = value, got {values['set']!r}")
    try:
        return base.merged(values)
    except ValidationError as exc:
        key, message, value = first_validation_error(exc)
        raise UserInputError(f"{where}: invalid {key!r}: {message} (got {value!r})") from None


def _canonical_names(values: dict[str, Any], where: str) -> dict[str, Any]:
    """``values`` with the fields named by an alias (``FIELD_ALIASES``) under their names."""
    renamed = dict(values)
    for alias, name in FIELD_ALIASES.items():
        if alias in renamed:
            if name in renamed:
                raise UserInputError(f"{where}: {alias!r} and {name!r} are the same field; give "
                                     f"{name!r} alone")
            renamed[name] = renamed.pop(alias)
    return renamed


def _product(base: SweepPoint, axes: dict[str, list[Any]], where: str) -> list[SweepPoint]:
    choices: list[list[dict[str, Any]]] = []
    for axis, values in axes.items():
        if not isinstance(values, list) or not values:
            raise UserInputError(f"{where}: matrix axis {axis!r} must be a non-empty list")
        if axis in AXIS_FIELDS or axis in FIELD_ALIASES:
            choices.append([{axis: value} for value in values])
        elif axis == "set":
            choices.append([_bundle(v, f"{where}: axis 'set'", as_set=True) for v in values])
        else:
            choices.append([_bundle(v, f"{where}: axis {axis!r}") for v in values])
    return [
        _point(base, {k: v for combo in combination for k, v in combo.items()}, where)
        for combination in itertools.product(*choices)
    ]


def _bundle(value: Any, where: str, as_set: bool = False) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UserInputError(
            f"{where}: values of an axis not named after a run field must be tables of fields "
            f"(run fields: {', '.join(AXIS_FIELDS)}); got {value!r}")
    return {"set": value} if as_set else dict(value)


def _unique(points: list[SweepPoint]) -> list[SweepPoint]:
    seen: set[SweepPoint] = set()
    result = []
    for point in points:
        if point not in seen:
            seen.add(point)
            result.append(point)
    return result


def load_sweep_file(path: Path) -> SweepSpec:
    """Parse a sweep TOML file; errors name the file and the bad key."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserInputError(f"sweep file {path} does not exist") from None
    except IsADirectoryError:
        raise UserInputError(f"sweep file {path} is a folder; give a .toml file (see sweeps/)") from None
    except OSError as exc:
        raise UserInputError(f"sweep file {path} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise UserInputError(f"sweep file {path} is not UTF-8 text (a TOML file is)") from None
    except tomllib.TOMLDecodeError as exc:
        raise UserInputError(f"sweep file {path} is not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"sweep", "matrix", "group"})
    if unknown:
        raise UserInputError(
            f"sweep file {path}: unknown top-level table(s) {', '.join(unknown)}; "
            "valid: [sweep], [matrix], [[group]]")
    head = dict(_table(data.get("sweep", {}), f"sweep file {path}: [sweep]"))
    meta = {key: head.pop(key) for key in ("name", "description", "source") if key in head}
    raw_groups = data.get("group", [])
    if not isinstance(raw_groups, list):
        raise UserInputError(f"sweep file {path}: 'group' must be an array of tables ([[group]])")
    groups = []
    for number, raw in enumerate(raw_groups, start=1):
        raw = dict(_table(raw, f"sweep file {path}: [[group]] number {number}"))
        if "name" not in raw:
            raise UserInputError(f"sweep file {path}: every [[group]] needs a name")
        group_meta = {key: raw.pop(key) for key in ("name", "description") if key in raw}
        matrix = raw.pop("matrix", {})
        try:
            groups.append(SweepGroup(**group_meta, defaults=raw, matrix=matrix))
        except ValidationError as exc:
            key, message, value = first_validation_error(exc)
            raise UserInputError(f"sweep file {path}: [[group]] number {number}: invalid {key!r}: "
                                 f"{message} (got {value!r})") from None
    meta.setdefault("name", Path(path).stem)
    try:
        return SweepSpec(**meta, defaults=head, matrix=data.get("matrix", {}), groups=groups)
    except ValidationError as exc:
        key, message, value = first_validation_error(exc)
        raise UserInputError(f"sweep file {path}: invalid {key!r}: {message} (got {value!r})") from None


def _table(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise UserInputError(f"{where} must be a table of key = value, got {value!r}")
    return value


def set_values(raw: str) -> list[str]:
    """The values of one ``--set key=...`` of a sweep, hydra style: ``full,none`` is an axis of
    two values; a quoted value (``"a,b"`` or ``'a,b'``) is one value with its commas."""
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return [raw[1:-1]]
    values = [value.strip() for value in raw.split(",")]
    if any(not value for value in values):
        raise UserInputError(f"--set value {raw!r} has an empty item; separate values with "
                             "commas (full,none) or quote a value that contains commas")
    return values


def apply_cli_axes(points: list[SweepPoint], axes: dict[str, list[Any]],
                   overrides: dict[str, Any],
                   set_axes: dict[str, list[str]] | None = None) -> list[SweepPoint]:
    """Lay command-line lists over the expanded points.

    A list given on the command line replaces that field everywhere (also inside bundles),
    multiplying the points by its length; so does each ``--set key=a,b`` (``set_axes``: key ->
    values); ``overrides`` are single values set on every point.
    """
    points = points or [SweepPoint()]
    for axis, values in axes.items():
        if values:
            points = [_point(p, {axis: v}, f"--{axis.replace('_', '-')}") for p in points for v in values]
    for key, values in (set_axes or {}).items():
        # The value also labels the point, so reports and the summary tell the points apart.
        points = [_point(p, {"set": {key: v}, "label": " ".join(filter(None, (p.label, f"{key}={v}")))},
                         f"--set {key}") for p in points for v in values]
    if overrides:
        points = [_point(p, overrides, "command line") for p in points]
    return _unique(points)
