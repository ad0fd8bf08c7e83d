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

import statistics
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
    median_step_s: float | None = Field(
        None, description="Median time per iteration between the arrivals of consecutive step "
                          "lines in that window (each gap over the iterations it spans), seconds; "
                          "None with fewer than two measured steps or no window.")


def units_per_iteration(config, unit: str) -> float:
    """Units one training iteration processes: the global batch, in tokens for ``tokens/s``."""
    batch = config.settings.global_batch_size
    seq_len = config.params.get("seq_len")
    if unit.startswith("tokens") and isinstance(seq_len, (int, float)):
        return float(batch * seq_len)
    return float(batch)


def _window_steps(step_times: dict[int, float], skip_steps: int) -> list[int]:
    """The steps whose lines bound and fill the measured window, in order: from the last
    warm-up step (the first step, when none is skipped) to the last step."""
    steps = sorted(step_times)
    before = [s for s in steps if s <= skip_steps]
    return steps[steps.index(before[-1]):] if before else steps


def timed_rate(step_times: dict[int, float], skip_steps: int, units: float) -> tuple[float, float] | None:
    """(units per second, window seconds) over the measured steps, from the arrival time of each
    step's line: the window runs from the last warm-up step's line (the first step's, when none
    is skipped) to the last step's line, and covers the iterations between their step numbers."""
    steps = _window_steps(step_times, skip_steps)
    if len(steps) < 2:
        return None
    start = steps[0]
    window = step_times[steps[-1]] - step_times[start]
    if window <= 0:
        return None
    return (steps[-1] - start) * units / window, window


def median_step_gap(step_times: dict[int, float], skip_steps: int) -> float | None:
    """The median time per iteration between consecutive step lines of the measured window
    (``timed_rate``'s): one line that arrives late (or a few early ones in a burst) moves the
    window's ends but not this."""
    window = _window_steps(step_times, skip_steps)
    gaps = [(step_times[b] - step_times[a]) / (b - a) for a, b in zip(window, window[1:])]
    return statistics.median(gaps) if gaps else None


def _apart(a: float, b: float) -> bool:
    return abs(a - b) > CLOCK_TOLERANCE * b


def clock_disagreement(claimed: float | None, witness: Witness, unit: str,
                       logged_step_s: float | None = None) -> str | None:
    """The reason the rate a log states is not what the harness timed, or None.

    Both of the harness's measures must contradict the log: the rate over the whole window
    against ``claimed``, and the median arrival gap of consecutive step lines against the log's
    median step time (``logged_step_s``), where both are known. A slowed clock in the process
    shortens every step it logs, so both see it; a line that arrived late (or lines bunched by
    the pipe) moves only the window's ends, so the medians still agree and the log stands."""
    timed = witness.timed_throughput
    if claimed is None or timed is None:
        return None
    if not _apart(claimed, timed):
        return None
    if (witness.median_step_s and logged_step_s
            and not _apart(logged_step_s, witness.median_step_s)):
        return None
    return (f"log claims {claimed:,.0f} {unit}, harness timed {timed:,.0f} over the same steps "
            f"(more than {CLOCK_TOLERANCE:.0%} apart)")


def count_disagreement(log_records: int, witness: Witness) -> str | None:
    if log_records == witness.step_records:
        return None
    return (f"the log holds {log_records} step records, the harness saw {witness.step_records} "
            "arrive from the training process")


def logged_rate(figures, reading: LogReading | None = None, skip_steps: int = 0) -> float | None:
    """The rate the log states over its measured steps, as the harness's clock measures one:
    units over time (the total-work figure); where the log states per-step rates but no step
    times (NVIDIA's DLLogger lines), their harmonic mean, which is units over time for steps of
    one batch each (their arithmetic mean, FINAL_RESULT, weighs a slow step as much as a fast
    one and lies above any wall clock when steps vary); else FINAL_RESULT."""
    if figures.total_work is not None:
        return figures.total_work
    from harness.stats import after_warmup

    rates = list(after_warmup(reading.summary.throughput, skip_steps)) if reading is not None else []
    if rates and all(r > 0 for r in rates):
        return len(rates) / sum(1.0 / r for r in rates)
    return figures.final


def logged_step_time(figures) -> float | None:
    """The log's median step time over its measured steps, seconds (None where it times none)."""
    return figures.step_time.median if figures.step_time is not None else None


def witness_problem(log_path: Path, reading: LogReading | None, logged: float | None,
                    witness: Witness, unit: str, timed: bool = True,
                    logged_step_s: float | None = None) -> str | None:
    """Why a repeat's log is not what the harness saw of its training process, or None: the
    log changed after it was captured, or (``timed``: the built-in frameworks' scripts, whose
    step lines are printed as each step ends) holds another number of step records or states a
    throughput (and median step time, ``logged_step_s``) the arrival times of its step lines
    do not bear out."""
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
            or clock_disagreement(logged, witness, unit, logged_step_s))
