"""Certification suites: TOML data naming cases x layouts x precision at a fixed scale.

A suite file has a ``[suite]`` table (name, kind, scale, repeats, step window, noise bound,
loss checkpoints) and ``[[point]]`` tables, one per case, each with its layouts (``nproc``:
process counts, ``"all"`` for every device of the node) and optional ``precision``,
``framework`` and ``set`` (case settings the suite fixes, e.g. the batch size of a seed's
table). Built-in suites live in ``harness/certify/suites/``; plugins add theirs through the
``certify_suites`` hook.
"""

from __future__ import annotations

import hashlib
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.certify.scoring import OLYMPIC_MIN
from harness.errors import UserInputError, did_you_mean, first_validation_error
from harness.models.case import ParamValue

if TYPE_CHECKING:
    from harness.app import Harness

    from harness.registry import Registry

BUILTIN_DIR = Path(__file__).parent / "suites"
#: Fewest repeats a suite of each kind may ask for (olympic scoring drops two of them).
MIN_REPEATS = {"smoke": OLYMPIC_MIN, "full": 5}
#: What every repeats deviation says (``repeats_deviation``), by which a recorded one is found.
REPEATS_DEVIATION = "repeats per point instead of the suite's"


class EquivalenceRequirement(BaseModel):
    """``[suite.equivalence]``: the vendor's framework build must train a stored reference
    initial state to the reference loss curve within the fp32-rounding tolerances of
    ``harness equivalence`` (one fp32 process on the vendor's devices)."""

    model_config = ConfigDict(extra="forbid")

    case: str = Field(description="The case whose reference is checked.")
    reference: str = Field(description="Folder of a stored `harness equivalence` check (its "
                                       "initial_state.npz and a framework's trace); relative "
                                       "paths are relative to the suite file's folder.")
    reference_framework: str | None = Field(None, description="Whose trace in it is the reference.")
    steps: int | None = Field(None, ge=1, description="Steps to train and compare; default and "
                                                      "at most: the reference's.")
    scale: Literal["smoke", "full"] = "smoke"


class SuiteSettings(BaseModel):
    """The ``[suite]`` table."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    kind: Literal["smoke", "full"]
    scale: Literal["smoke", "full"]
    repeats: int = Field(ge=OLYMPIC_MIN, description="Runs of every point; olympic score over them.")
    max_steps: int | None = Field(None, ge=1, description="Steps of every run (case default if unset).")
    skip_steps: int | None = Field(None, ge=0, description="Warm-up steps left out of FINAL_RESULT.")
    cv_bound: float = Field(gt=0, lt=1, description="Largest CV of FINAL_RESULT over repeats.")
    max_failed_repeats: int = Field(1, ge=0, description="More failed repeats than this fail the point.")
    checkpoints: list[int] = Field(min_length=1, description="Steps whose loss must lie in the band.")
    checkpoint_window: int = Field(1, ge=1, description="Loss at a checkpoint: mean of this many steps up to it.")
    framework: str | None = None
    equivalence: EquivalenceRequirement | None = Field(
        None, description="Also require the framework build to match a stored equivalence "
                          "reference (the `equivalence` check).")

    @model_validator(mode="after")
    def _enough_repeats(self):
        if self.repeats < MIN_REPEATS[self.kind]:
            raise ValueError(f"a {self.kind} suite needs repeats >= {MIN_REPEATS[self.kind]}")
        return self


class SuitePoint(BaseModel):
    """One ``[[point]]``: a case on one or more layouts."""

    model_config = ConfigDict(extra="forbid")

    case: str
    nproc: list[Union[int, Literal["all"]]] = Field(default_factory=lambda: [1], min_length=1)
    nnodes: int = Field(1, ge=1)
    precision: Literal["fp32", "fp16", "bf16"] | None = None
    framework: str | None = None
    set: dict[str, ParamValue] = Field(default_factory=dict)
    checkpoints: list[int] | None = Field(None, min_length=1, description="Instead of the suite's.")
    checkpoint_window: int | None = Field(None, ge=1, description="Instead of the suite's.")


class SuiteFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    suite: SuiteSettings
    point: list[SuitePoint] = Field(min_length=1)


class PlannedPoint(BaseModel):
    """One layout of one point: what a single run of the suite resolves from (and, with
    what became of it, a point of certification.json: ``record.PointRecord``)."""

    model_config = ConfigDict(frozen=True)

    label: str
    case: str
    framework: str
    nproc: int
    nnodes: int
    precision: str | None
    settings: dict[str, ParamValue] = Field(description="The suite's fixed settings of this point.")
    checkpoints: tuple[int, ...] = Field((), description="Loss checkpoint steps.")
    checkpoint_window: int = 1


@dataclass(frozen=True)
class Suite:
    spec: SuiteFile
    text: str  # the file as read: bundled and hashed, so a verifier sees exactly this suite
    source: str  # "builtin:<name>", a plugin's name, or the file path
    folder: Path | None = None  # where the suite file lies: its relative paths start there

    @property
    def name(self) -> str:
        return self.spec.suite.name

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode()).hexdigest()


def repeats_deviation(repeats: int, suite: SuiteSettings) -> str | None:
    """The deviation a certification records when it runs fewer repeats per point than its
    suite asks for (``--repeats``); None when it runs them all."""
    if repeats >= suite.repeats:
        return None
    minimum = MIN_REPEATS[suite.kind]
    below = f" (below the {suite.kind} minimum of {minimum})" if repeats < minimum else ""
    return f"{repeats} {REPEATS_DEVIATION} {suite.repeats}{below}"


def suite_sources(harness: Harness | None = None) -> dict[str, tuple[Path, str]]:
    """Known suites: name -> (file, source). Built-ins first; a plugin's suite of the same
    name does not replace a built-in one."""
    found: dict[str, tuple[Path, str]] = {
        path.stem: (path, "builtin") for path in sorted(BUILTIN_DIR.glob("*.toml"))
    }
    if harness is not None:
        for plugin_paths in harness.hook.certify_suites():
            for path in plugin_paths or []:
                found.setdefault(Path(path).stem, (Path(path), "plugin"))
    return found


def parse_suite_text(text: str, origin: str) -> SuiteFile:
    """Parse and validate a suite file's text; errors are one line naming ``origin``."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserInputError(f"suite {origin}: TOML syntax error: {exc}") from None
    try:
        return SuiteFile.model_validate(data)
    except ValidationError as exc:
        where, message, _ = first_validation_error(exc)
        raise UserInputError(f"suite {origin}: {where}: {message}") from None


def load_suite(name_or_path: str, harness: Harness) -> Suite:
    """A suite by built-in/plugin name or file path, validated against the installed cases."""
    known = suite_sources(harness)
    path = Path(name_or_path)
    if name_or_path in known:
        file, source = known[name_or_path]
        source = f"{source}:{name_or_path}"
    elif path.suffix == ".toml" or path.exists():
        if not path.is_file():
            raise UserInputError(f"suite file {name_or_path!r} does not exist")
        file, source = path, str(path)
    else:
        raise UserInputError(f"unknown suite {name_or_path!r}. " + did_you_mean(name_or_path, known))
    text = file.read_text(encoding="utf-8")
    spec = parse_suite_text(text, str(name_or_path))
    check_points(spec, harness.registry, str(name_or_path))
    return Suite(spec=spec, text=text, source=source, folder=Path(file).resolve().parent)


def check_points(spec: SuiteFile, registry: Registry, origin: str) -> None:
    """Every point names an installed case, and its ``set`` keys are that case's settings."""
    from harness.config_resolution import SETTINGS_KEYS

    for index, point in enumerate(spec.point, 1):
        case = registry.cases.get(point.case)  # unknown case: one-line error listing cases
        valid = SETTINGS_KEYS | set(case.params)
        for key in point.set:
            if key not in valid:
                raise UserInputError(
                    f"suite {origin}: point {index} ({point.case}): {key!r} is not a setting of "
                    f"case {point.case!r}. " + did_you_mean(key, valid)
                )
            if key in case.immutable:
                raise UserInputError(
                    f"suite {origin}: point {index} ({point.case}): {key!r} identifies the case "
                    "and cannot be set"
                )


def plan_points(suite: Suite, registry: Registry, device_count: int,
                framework: str | None = None) -> list[PlannedPoint]:
    """Expand the suite's points over their layouts (``"all"`` = ``device_count``); layouts
    that expand to the same process count are run once."""
    spec = suite.spec.suite
    planned: list[PlannedPoint] = []
    seen: set[str] = set()
    for point in suite.spec.point:
        case = registry.cases.get(point.case)
        chosen = framework or point.framework or spec.framework or registry.default_framework(case)
        registry.check_case_framework(case, chosen)
        settings: dict[str, ParamValue] = dict(point.set)
        if spec.max_steps is not None:
            settings.setdefault("max_steps", spec.max_steps)
        if spec.skip_steps is not None:
            settings.setdefault("skip_steps", spec.skip_steps)
        for nproc in point.nproc:
            count = device_count if nproc == "all" else int(nproc)
            precision = point.precision
            label = f"{point.case}-{chosen}-{point.nnodes}x{count}" + (f"-{precision}" if precision else "")
            if point.set.get("micro_batch_size"):
                label += f"-bs{point.set['micro_batch_size']}"
            if label in seen:
                continue
            seen.add(label)
            planned.append(PlannedPoint(
                label=label, case=point.case, framework=chosen, nproc=count, nnodes=point.nnodes,
                precision=precision, settings=settings,
                checkpoints=tuple(point.checkpoints or spec.checkpoints),
                checkpoint_window=point.checkpoint_window or spec.checkpoint_window))
    return planned
