"""``certification.json``: what was planned and run, and what was concluded from it.

The plan part (suite, vendor, points and their run ids, deviations) is the input a
verifier re-evaluates; the conclusion part (summaries, checks, passed) is the claim it
recomputes and compares.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from harness.certify.checks import Check
from harness.certify.probe import PeakProbe
from harness.certify.suite import PlannedPoint

FORMAT_VERSION = 1


class PointRecord(PlannedPoint):
    """A planned point and what became of it: its runs, or why it did not run."""

    model_config = ConfigDict(frozen=False)  # filled in as the point runs

    run_ids: list[str] = Field(default_factory=list, description="One run per repeat, in order.")
    refused: str | None = Field(None, description="Why the point was not run (a rule it broke).")
    errors: list[str] = Field(default_factory=list, description="Repeats that could not start.")
    probe: PeakProbe | None = Field(
        None, description="The device's dense matmul rate measured through the point's framework "
                          "before the runs, beside the vendor's declared peak and its source.")

    @classmethod
    def of(cls, point: PlannedPoint) -> PointRecord:
        """The record of a planned point, before any run."""
        return cls(**point.model_dump())


class PointSummary(BaseModel):
    label: str
    case: str
    unit: str | None = None
    values: list[float | None] = Field(default_factory=list, description="FINAL_RESULT per repeat (re-parsed).")
    score: float | None = Field(None, description="Olympic mean: best and worst repeat dropped.")
    cv: float | None = None
    mfu: float | None = None
    peak_memory_bytes: int | None = None
    energy_per_unit_j: float | None = None
    checkpoint_losses: list[dict[str, float | None]] = Field(
        default_factory=list, description="Per repeat: checkpoint step -> windowed loss.")


def verdict_lines(checks: list[Check], summaries: list[PointSummary], recomputed: bool = False) -> list[str]:
    """A line per check and per scored point, as ``certify run`` and ``certify verify`` print
    them (``recomputed``: the scores were recomputed from a bundle)."""
    out = []
    for check in checks:
        where = f" [{check.point}]" if check.point else ""
        out.append(f"{'pass' if check.passed else 'FAIL'} {check.name}{where}: {check.reason}")
    how = "olympic, recomputed" if recomputed else "olympic"
    for summary in summaries:
        if summary.score is not None:
            cv = f", CV {summary.cv:.2%}" if summary.cv is not None else ""
            out.append(f"score {summary.label}: {summary.score:,.2f} {summary.unit} ({how}{cv})")
    return out


class Certification(BaseModel):
    format_version: int = FORMAT_VERSION
    id: str
    suite: str
    suite_source: str
    suite_sha256: str
    vendor: str
    scale: str
    repeats: int = Field(description="Repeats run per point.")
    suite_repeats: int = Field(description="Repeats the suite asks for.")
    set_pairs: dict[str, str] = Field(default_factory=dict, description="Vendor --set tuning.")
    deviations: list[str] = Field(default_factory=list)
    harness_version: str
    started_at: datetime
    finished_at: datetime | None = None
    points: list[PointRecord]
    stopped: str | None = Field(None, description="Why the certification ended before every run "
                                                  "(a stop signal); what finished is kept.")
    summaries: list[PointSummary] = Field(default_factory=list)
    checks: list[Check] = Field(default_factory=list)
    passed: bool = False
