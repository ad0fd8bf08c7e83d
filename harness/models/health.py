"""Whether a run's training was healthy: the verdict of ``harness.health`` on its loss curve."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

HealthStatus = Literal["healthy", "unhealthy", "unjudged"]
CheckName = Literal["finite", "no_spike", "below_uniform", "falling"]


class HealthCheck(BaseModel):
    """One rule of the health check and what it found."""

    model_config = ConfigDict(extra="forbid")

    name: CheckName
    passed: bool | None = Field(description="True or False; None when the rule could not be judged.")
    detail: str = Field(description="What was compared, or why the rule was not judged.")


class Health(BaseModel):
    """The health verdict of a run's loss curve (rules in ``harness/health.py``).

    ``unhealthy`` when any rule failed (``reasons`` lists them), ``healthy`` when none failed
    and at least one was judged, ``unjudged`` when the log gave no loss to judge.
    """

    model_config = ConfigDict(extra="forbid")

    status: HealthStatus
    reasons: list[str] = Field(default_factory=list, description="The failed rules' details.")
    checks: list[HealthCheck] = Field(default_factory=list)
    first_steps: int = Field(
        description="Steps 1..first_steps are the first steps, which the below-uniform and "
                    "falling rules leave out: the run's skip_steps, at least 1.")
    noise: float | None = Field(
        None, description="Median absolute change between successive losses after the first "
                          "steps: a record is a spike only beyond 4 noises above the first loss.")
    uniform_loss: float | None = Field(
        None, description="The loss of a uniform guess over the case's classes (ln of the "
                          "vocabulary for a language model); None when the case declares none.")
    peak_learning_rate: float | None = Field(
        None, description="The peak of the run's learning-rate schedule (its learning_rate "
                          "parameter); below 1% of it, in the logged learning rates, the run is "
                          "at the very start of its warm-up and the below-uniform rule is not "
                          "judged. None when unknown (an ingested log).")

    @property
    def failed(self) -> bool:
        return self.status == "unhealthy"
