"""The stored verdict of an equivalence check (``equivalence.json`` in the check's folder),
and where checks are kept: ``<results>/equivalence/<case>/<stamp>/``."""

from __future__ import annotations

import secrets
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field, ValidationError

from harness.equivalence.check import PairVerdict
from harness.errors import UserInputError
from harness.results_io import atomic_write_text

if TYPE_CHECKING:
    from harness.equivalence.runner import EquivalenceRequest
    from harness.models import CaseSpec

RESULT_FILE = "equivalence.json"
#: The folder of a results folder that keeps the checks.
CHECKS_FOLDER = "equivalence"


class FrameworkRun(BaseModel):
    framework: str
    status: str = Field(description="the run's status, or 'not run'")
    run_id: str | None = None
    framework_version: str | None = None
    error: str | None = Field(None, description="why it left no trace")


class EquivalenceResult(BaseModel):
    case: str
    model: str
    frameworks: list[str]
    reference: str = Field(description="the framework every other one is compared with")
    reference_dir: str | None = Field(None, description="a stored check whose state and trace "
                                                        "were the reference")
    steps: int
    precision: str = Field("fp32", description="the check runs' arithmetic (the case's "
                                               "equivalence_precision)")
    vendor: str
    scale: str
    checked_at: datetime
    runs: list[FrameworkRun]
    pairs: list[PairVerdict]
    config_differences: list[str] = Field(description="resolved config keys whose values differ "
                                                      "between the frameworks")
    intentional: list[str] = Field(description="the case's documented intentional differences")
    trace_notes: dict[str, list[str]] = Field(default_factory=dict)
    folder: str = ""

    @classmethod
    def build(cls, *, case: CaseSpec, request: EquivalenceRequest, reference: str,
              runs: list[FrameworkRun], pairs: list[PairVerdict], config_differences: list[str],
              trace_notes: dict[str, list[str]], folder: Path) -> "EquivalenceResult":
        return cls(case=case.name, model=case.model, frameworks=list(request.frameworks),
                   reference=reference,
                   reference_dir=str(request.reference_dir) if request.reference_dir else None,
                   steps=request.steps, precision=case.equivalence_precision,
                   vendor=request.vendor, scale=request.scale,
                   checked_at=datetime.now(timezone.utc), runs=runs, pairs=pairs,
                   config_differences=config_differences, intentional=list(case.equivalence_notes),
                   trace_notes=trace_notes, folder=str(folder))

    @property
    def passed(self) -> bool:
        every_run = all(r.error is None and r.status == "success" for r in self.runs)
        expected = len(self.frameworks) - (0 if self.reference_dir else 1)
        # One framework and no reference: the check records a reference (nothing to compare).
        return (every_run and len(self.pairs) == expected and not self.config_differences
                and all(p.passed for p in self.pairs))

    @property
    def max_loss_difference(self) -> float | None:
        values = [p.max_loss_difference for p in self.pairs if p.max_loss_difference is not None]
        return max(values, default=None)

    def statement(self) -> str:
        """The line ``harness compare`` shows: what was checked, when, and how close."""
        date = self.checked_at.date().isoformat()
        names = ", ".join(self.frameworks) if not self.reference_dir else \
            f"{', '.join(self.frameworks)} against the stored {self.reference} reference"
        if not self.pairs and self.passed:
            return (f"reference recorded: {self.reference} on {self.case} ({self.scale} scale, "
                    f"{self.steps} steps {self.precision}, {date})")
        if not self.passed:
            return f"NOT an equivalent workload: {names} on {self.case} differ (checked on {date})"
        diff = self.max_loss_difference
        return (f"equivalent workload: checked on {date} ({names}, {self.scale} scale, "
                f"{self.steps} steps {self.precision}), max loss difference {diff:.2e}")

    def write(self, folder: Path) -> None:
        atomic_write_text(folder / RESULT_FILE, self.model_dump_json(indent=2) + "\n")


def new_check_dir(output: Path, case: str, create: bool = True) -> Path:
    """A new folder for a check of ``case`` (created unless ``create`` is false)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    folder = output / CHECKS_FOLDER / case / f"{stamp}-{secrets.token_hex(2)}"
    if create:
        folder.mkdir(parents=True, exist_ok=False)
    return folder


def read_result(path: Path) -> EquivalenceResult:
    try:
        return EquivalenceResult.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError) as exc:
        raise UserInputError(f"{path}: not an equivalence result ({str(exc).splitlines()[0]})") from None


def latest_check(output: Path, case: str, frameworks: set[str]) -> EquivalenceResult | None:
    """The newest stored check of ``case`` that covers all of ``frameworks`` (unreadable
    files are skipped), or None."""
    folder = output / CHECKS_FOLDER / case
    if not folder.is_dir():
        return None
    for path in sorted(folder.glob(f"*/{RESULT_FILE}"), reverse=True):
        try:
            result = read_result(path)
        except UserInputError:
            continue
        if frameworks <= set(result.frameworks) | {result.reference}:
            return result
    return None
