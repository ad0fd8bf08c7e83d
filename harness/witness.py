"""What the harness itself saw of a training process, against what its log says.

The core reads the training process's output from the pipe (``runner/process.py``), so it is
the witness of three things no plugin can restate: the log's bytes as captured (hashed before
any ``execute`` wrapper returns), when each step record arrived (the core's own clock), and
how many arrived. A repeat whose log differs from the capture, holds another number of step
records, or states a throughput its own arrival times do not bear out is ``invalid``: that
catches an edited, extended, shortened or replayed log and a slowed clock inside the process.
``certify verify`` applies the same rule to the recorded witness.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from harness.logparse.summary import LogReading

#: How far the rate a log states over its measured steps (units over its own step times) may
#: lie from the rate the harness timed (relative to the latter). The log times each step inside
#: the process; the harness times the arrival of the step lines, which adds only the logging
#: and the pipe: within 6% on a busy 2-core machine (GPT-3 125M 0.4%, BERT-base 5.6%).
CLOCK_TOLERANCE = 0.20


class Witness(BaseModel):
    """The harness's own record of one repeat's output."""

    log_sha256: str = Field(description="sha256 of the output as the harness captured it from the pipe.")
    step_records: int = Field(ge=0, description="Step records the harness saw arrive on the pipe.")
    timed_throughput: float | None = Field(
        None, description="Units (tokens, samples) of the measured steps over the time between "
                          "the arrival of the last warm-up step's line and the last step's line, "
                          "by the harness's clock; None with fewer than two measured steps.")
    window_s: float | None = Field(None, description="That measured window, seconds.")


def units_per_iteration(config, unit: str) -> float:
    """Units one training iteration processes: the global batch, in tokens for ``tokens/s``."""
    batch = config.settings.global_batch_size
    seq_len = config.params.get("seq_len")
    if unit.startswith("tokens") and isinstance(seq_len, (int, float)):
        return float(batch * seq_len)
    return float(batch)


def timed_rate(step_times: dict[int, float], skip_steps: int, units: float) -> tuple[float, float] | None:
    """(units per second, window seconds) over the measured steps, from the arrival time of each
    step's line: the window runs from the last warm-up step's line (the first step's, when none
    is skipped) to the last step's line, and covers the iterations between their step numbers."""
    steps = sorted(step_times)
    before = [s for s in steps if s <= skip_steps]
    start = before[-1] if before else (steps[0] if steps else None)
    if start is None or steps[-1] <= start:
        return None
    window = step_times[steps[-1]] - step_times[start]
    if window <= 0:
        return None
    return (steps[-1] - start) * units / window, window


def clock_disagreement(claimed: float | None, witness: Witness, unit: str) -> str | None:
    """The reason the rate a log states is not what the harness timed, or None."""
    timed = witness.timed_throughput
    if claimed is None or timed is None:
        return None
    if abs(claimed - timed) <= CLOCK_TOLERANCE * timed:
        return None
    return (f"log claims {claimed:,.0f} {unit}, harness timed {timed:,.0f} over the same steps "
            f"(more than {CLOCK_TOLERANCE:.0%} apart)")


def count_disagreement(log_records: int, witness: Witness) -> str | None:
    if log_records == witness.step_records:
        return None
    return (f"the log holds {log_records} step records, the harness saw {witness.step_records} "
            "arrive from the training process")


def logged_rate(figures) -> float | None:
    """The rate the log states over its measured steps, as the harness's clock measures one:
    units over time (the total-work figure), else FINAL_RESULT where the log times no steps."""
    return figures.total_work if figures.total_work is not None else figures.final


def witness_problem(log_path: Path, reading: LogReading | None, logged: float | None,
                    witness: Witness, unit: str, timed: bool = True) -> str | None:
    """Why a repeat's log is not what the harness saw of its training process, or None: the
    log changed after it was captured, or (``timed``: the built-in frameworks' scripts, whose
    step lines are printed as each step ends) holds another number of step records or states a
    throughput the arrival times of its step lines do not bear out."""
    from harness.provenance import sha256_file  # provenance imports the result models, which import this

    try:
        changed = sha256_file(log_path) != witness.log_sha256
    except OSError:
        changed = True
    if changed:
        return (f"{log_path.name} was changed after the harness captured it from the training "
                "process (its sha256 differs from the capture's)")
    if not timed:
        return None
    return (count_disagreement(reading.summary.count if reading else 0, witness)
            or clock_disagreement(logged, witness, unit))
