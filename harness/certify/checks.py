"""A certification check's verdict: a name, pass/fail, and the reason in words."""

from __future__ import annotations

from pydantic import BaseModel, Field

#: The named checks, in report order.
CHECK_NAMES = ("suite", "rules", "read_back", "repeats", "noise", "convergence", "health",
               "equivalence", "system", "integrity")


class Check(BaseModel):
    name: str = Field(description="One of CHECK_NAMES.")
    passed: bool
    reason: str
    point: str | None = Field(None, description="Suite point label; None for whole-bundle checks.")


def passed(name: str, reason: str, point: str | None = None) -> Check:
    return Check(name=name, passed=True, reason=reason, point=point)


def failed(name: str, reason: str, point: str | None = None) -> Check:
    return Check(name=name, passed=False, reason=reason, point=point)
