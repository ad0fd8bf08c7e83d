"""The health check of a run's training: its loss curve judged by four rules.

A benchmark's speed means nothing if its training diverged, so every result carries a verdict
(``BenchmarkResult.health``) and certification refuses a point whose runs are unhealthy.
The rules read the logged loss records, (step, loss) pairs; logs that print every N
iterations give one record per N steps. Definitions:

- **the first steps**: steps 1 to the run's ``skip_steps`` (the warm-up its throughput
  measurement already leaves out as unstable), and at least step 1. The **window** is every
  logged record after them.
- ``finite``: no logged loss is NaN or infinite (counted over every record of the log).
- **noise**: the median absolute change between successive records of the window, the
  batch-to-batch scatter of the loss (small batches of a small data set scatter by a tenth
  of the loss; 100k-token GPT batches by a few thousandths). A record counts as a spike only
  when it exceeds the first loss by more than ``NOISE_MULTIPLE`` times the noise, and the
  noise never excuses more than ``MAX_NOISE_SHARE`` of that loss (an explosive climb has
  large changes too).
- ``no_spike``: no record after the first exceeds the first record's loss by more than
  ``SPIKE_TOLERANCE`` of it or ``NOISE_MULTIPLE`` noises, whichever is larger. Training
  that starts healthily only goes down from its initial loss, warm-up included; a loss
  climbing above where it started is a divergence.
- ``below_uniform``: the mean loss of the window's last quarter (``ceil(n/4)`` records) is at
  most the uniform-guess loss, the loss of predicting every class with equal probability
  (ln(vocabulary) for a language model, from the case's ``uniform_loss_classes``): by the end
  of the window a model must do better than knowing nothing. The end, not every record: a
  model may start above it (a GPT's initial loss is ln(V) + var(logits)/2) and, under a long
  warm-up, take many steps to come down, while a climb above the start is ``no_spike``'s to
  catch. Not judged when the case declares no classes or the window is empty, nor **at the
  very start of the warm-up**: when the learning rate is known (the logged learning-rate
  records and the schedule's peak, the run's ``learning_rate`` parameter) and the highest
  rate logged up to the window's last record is below ``EARLY_WARMUP_SHARE`` of the peak.
  A GPT warmed up over GPT-3's 375M tokens trains 10 to 30 steps at a fraction of a percent
  of its peak rate, the loss still on its way down from ln(V) + var(logits)/2 (gpt3_1.3B,
  14 steps of 65k tokens: 11.29 to 10.85 at 0.24% of the peak, healthy training), while past
  1% it is well below ln(V) (100 steps of 131k tokens, 3.5%: 8.73). The highest rate, not the
  last: a schedule that has decayed to its floor by the last step is past its warm-up. Where
  either is unknown (a log without learning rates, a case without that parameter, an
  ingested log) the rule is judged.
- ``falling``: the mean loss of the window's last quarter (``ceil(n/4)`` records) is below
  the mean of its first quarter: the loss fell over the measured window. Quarter means
  rather than the end points, so one noisy record decides nothing. Not judged with fewer
  than ``MIN_FALLING_RECORDS`` records in the window.

The rules other than ``finite`` read the result's loss curve, which keeps every record up to
512 and an evenly thinned sample of longer logs.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence

from harness.models.case import CaseSpec, ParamValue
from harness.models.health import Health, HealthCheck

#: How far (relative) a later loss may exceed the first before it counts as a spike: batch
#: to batch noise of the loss, not a divergence.
SPIKE_TOLERANCE = 0.02
#: How many noises (median successive change) a record may lie above a level by chance. For
#: independent scatter of standard deviation s the median successive change is 0.95 s, so 4 of
#: them is 3.8 s: in a window of 100 records one lies that far above by chance with
#: probability 0.7%.
NOISE_MULTIPLE = 4.0
#: The most the noise may excuse, as a share of the level compared against: a curve that
#: climbs explosively has large successive changes too, and no scatter is half the loss.
MAX_NOISE_SHARE = 0.5
#: Fewest records in the window for the falling rule: a quarter of four is one record each.
MIN_FALLING_RECORDS = 4
#: The share of the schedule's peak learning rate the run must have reached by the end of the
#: window before ``below_uniform`` is judged: below it the run is at the very start of its
#: warm-up, where the loss falls from its initial level, above the uniform-guess loss for a
#: GPT, without a defect.
EARLY_WARMUP_SHARE = 0.01
#: The case parameter that holds the peak of the learning-rate schedule: every built-in case's
#: training scripts warm up to it (``lr_schedule.lr_at``), and it is a measurement-window key
#: (``harness.measurement_window``).
PEAK_LEARNING_RATE_PARAM = "learning_rate"


def uniform_guess_loss(case: CaseSpec, params: Mapping[str, ParamValue]) -> float | None:
    """The loss of a uniform guess over the case's classes: the sum of ln(count) over its
    ``uniform_loss_classes``, each a number or the name of a parameter (read from ``params``,
    else the case's default); None when the case declares none or a count is not a positive
    integer."""
    if not case.uniform_loss_classes:
        return None
    total = 0.0
    for entry in case.uniform_loss_classes:
        count = entry if isinstance(entry, int) else params.get(entry, case.params.get(entry))
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            return None
        total += math.log(count)
    return total


def peak_learning_rate(params: Mapping[str, ParamValue]) -> float | None:
    """The peak of the run's learning-rate schedule: its ``learning_rate`` parameter; None
    when the run has none or it is not a positive number."""
    value = params.get(PEAK_LEARNING_RATE_PARAM)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 \
            or not math.isfinite(value):
        return None
    return float(value)


def judge_health(curve: Sequence[tuple[int, float]], *, skip_steps: int, non_finite: int = 0,
                 uniform_loss: float | None = None,
                 learning_rates: Sequence[tuple[int, float]] = (),
                 peak_learning_rate: float | None = None) -> Health:
    """The verdict of the rules above on ``curve`` (the logged (step, loss) records, in
    order); ``non_finite`` counts NaN/inf losses among all records, thinned out or not;
    ``learning_rates`` are the logged (step, learning rate) records and ``peak_learning_rate``
    the schedule's peak (``peak_learning_rate(params)``), which together tell whether the run
    is at the very start of its warm-up."""
    first_steps = max(1, skip_steps)
    base = dict(first_steps=first_steps, uniform_loss=uniform_loss, peak_learning_rate=peak_learning_rate)
    if not curve:
        return Health(status="unjudged", reasons=[], checks=[], **base)
    finite = [(step, loss) for step, loss in curve if math.isfinite(loss)]
    bad = max(non_finite, len(curve) - len(finite))
    window = [(step, loss) for step, loss in finite if step > first_steps]
    noise = loss_noise([loss for _, loss in window])
    checks = [
        HealthCheck(name="finite", passed=bad == 0,
                    detail="every logged loss is finite" if bad == 0 else
                    f"{bad} logged loss{'es are' if bad > 1 else ' is'} NaN or infinite"),
        _no_spike(finite, noise),
        _below_uniform(window, uniform_loss, first_steps, learning_rates, peak_learning_rate),
        _falling(window, first_steps),
    ]
    reasons = [check.detail for check in checks if check.passed is False]
    judged = any(check.passed is not None for check in checks)
    status = "unhealthy" if reasons else "healthy" if judged else "unjudged"
    return Health(status=status, reasons=reasons, checks=checks, noise=noise, **base)


def loss_noise(losses: Sequence[float]) -> float:
    """The median absolute change between successive losses; 0 with fewer than two changes
    (one change would be the trend as much as the scatter)."""
    changes = [abs(b - a) for a, b in zip(losses, losses[1:])]
    return statistics.median(changes) if len(changes) >= 2 else 0.0


def _no_spike(finite: list[tuple[int, float]], noise: float) -> HealthCheck:
    if len(finite) < 2:
        return HealthCheck(name="no_spike", passed=None, detail="fewer than 2 finite losses logged")
    (first_step, first), rest = finite[0], finite[1:]
    step, worst = max(rest, key=lambda record: record[1])
    allowance = max(abs(first) * SPIKE_TOLERANCE, min(NOISE_MULTIPLE * noise, abs(first) * MAX_NOISE_SHARE))
    if worst > first + allowance:
        return HealthCheck(name="no_spike", passed=False,
                           detail=f"loss {worst:.4g} at step {step} is above the first loss "
                                  f"{first:.4g} (step {first_step}) by more than {allowance:.3g}")
    return HealthCheck(name="no_spike", passed=True,
                       detail=f"no loss after step {first_step} above its loss {first:.4g} "
                              f"by more than {allowance:.3g} (highest {worst:.4g}, step {step})")


def quarter_means(window: list[tuple[int, float]]) -> tuple[tuple[float, str], tuple[float, str]]:
    """(mean, "steps a-b") of the window's first and last quarter, ``ceil(n/4)`` records each
    (the window holds at least one record)."""
    quarter = math.ceil(len(window) / 4)
    first, last = window[:quarter], window[-quarter:]
    return ((sum(loss for _, loss in first) / quarter, f"steps {first[0][0]}-{first[-1][0]}"),
            (sum(loss for _, loss in last) / quarter, f"steps {last[0][0]}-{last[-1][0]}"))


def _below_uniform(window: list[tuple[int, float]], uniform: float | None, first_steps: int,
                   learning_rates: Sequence[tuple[int, float]], peak: float | None) -> HealthCheck:
    if uniform is None:
        return HealthCheck(name="below_uniform", passed=None,
                           detail="the case declares no classes for a uniform-guess loss")
    if not window:
        return HealthCheck(name="below_uniform", passed=None,
                           detail=f"no finite loss logged after the first {first_steps} steps")
    end = window[-1][0]
    reached = [rate for step, rate in learning_rates if step <= end and math.isfinite(rate)]
    if peak is not None and reached and max(reached) < EARLY_WARMUP_SHARE * peak:
        highest = max(reached)
        return HealthCheck(name="below_uniform", passed=None,
                           detail=f"not judged: the learning rate reached {highest:.3g} by step {end}, "
                                  f"{100 * highest / peak:.2g}% of its peak {peak:.3g} (judged from "
                                  f"{100 * EARLY_WARMUP_SHARE:g}%); the loss falls from its initial "
                                  f"level during the first part of the warm-up")
    (_, _), (late, span) = quarter_means(window)
    if late > uniform:
        return HealthCheck(name="below_uniform", passed=False,
                           detail=f"mean loss of the window's last quarter {late:.4g} ({span}) is above "
                                  f"the uniform-guess loss {uniform:.4g}")
    return HealthCheck(name="below_uniform", passed=True,
                       detail=f"mean loss of the window's last quarter {late:.4g} ({span}) is below "
                              f"the uniform-guess loss {uniform:.4g}")


def _falling(window: list[tuple[int, float]], first_steps: int) -> HealthCheck:
    n = len(window)
    if n < MIN_FALLING_RECORDS:
        return HealthCheck(name="falling", passed=None,
                           detail=f"{n} finite loss record{'s' if n != 1 else ''} after the first "
                                  f"{first_steps} steps; the rule needs {MIN_FALLING_RECORDS}")
    (early, early_span), (late, late_span) = quarter_means(window)
    span = f"{early_span} against {late_span.removeprefix('steps ')}"
    if late < early:
        return HealthCheck(name="falling", passed=True,
                           detail=f"mean loss of the window's last quarter {late:.4g} below its first "
                                  f"quarter's {early:.4g} ({span})")
    return HealthCheck(name="falling", passed=False,
                       detail=f"the loss did not fall over the window: mean of its last quarter "
                              f"{late:.4g}, of its first {early:.4g} ({span})")


def unhealthy_note(health: Health | None) -> str | None:
    """``unhealthy: <reasons>`` for a run that failed the health check, else None (the note
    sweeps and reports put beside a run's figure)."""
    if health is None or not health.failed:
        return None
    return "unhealthy: " + "; ".join(health.reasons)
