"""Per-step curves of recorded runs side by side: one row per step, one column per run.

The curves are those the result keeps from the training log (``log_summary.loss_curve`` and
``learning_rate_curve``, at most 512 points each). ``harness results curves`` prints them as
tab-separated text or a Markdown table, so a loss curve can be pasted into a document.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from harness.config_resolution import set_by_user
from harness.errors import UserInputError
from harness.models import BenchmarkResult

#: Curve name -> the LogSummary field holding it.
CURVES = {"loss": "loss_curve", "learning_rate": "learning_rate_curve"}


def curve(result: BenchmarkResult, name: str) -> dict[int, float]:
    """Step -> value of one run's curve ``name`` (empty when the log had none)."""
    if name not in CURVES:
        raise UserInputError(f"unknown curve {name!r}; valid: {', '.join(CURVES)}")
    summary = result.log_summary
    if summary is None:
        return {}
    # A non-finite loss is stored as null: shown as nan, not as a step without a value.
    return {step: math.nan if value is None else value for step, value in getattr(summary, CURVES[name])}


def shown_steps(steps: set[int], every: int) -> list[int]:
    """The first and last step and every ``every``-th one in between, in order."""
    if every < 1:
        raise UserInputError(f"--every must be at least 1, got {every}")
    if not steps:
        return []
    first, last = min(steps), max(steps)
    return sorted(s for s in steps if s in (first, last) or s % every == 0)


def describe(result: BenchmarkResult) -> str:
    """One line naming what distinguishes a run: case, framework, vendor, precision, global
    batch, and the values set on the command line or in a sweep file."""
    chosen = sorted(f"{key}={_value(result, key)}" for key, source in result.config.sources.items()
                    if set_by_user(source))
    text = (f"{result.case} {result.framework} {result.vendor} {result.precision}, global batch "
            f"{result.global_batch_size}, {result.steps_completed}/{result.max_steps} steps")
    return text + (f" ({', '.join(chosen)})" if chosen else "")


def _value(result: BenchmarkResult, key: str):
    settings = result.config.settings.model_dump()
    return settings[key] if key in settings else result.config.params.get(key)


def curve_table(results: Sequence[BenchmarkResult], name: str, every: int = 1) -> tuple[list[str], list[list[str]]]:
    """(header, rows) of curve ``name`` of ``results``: a step column, then one per run; a run
    without a value at a step shows ``-``."""
    curves = [curve(result, name) for result in results]
    missing = [result.run_id for result, values in zip(results, curves) if not values]
    if missing:
        raise UserInputError(f"no {name} curve recorded for run(s) {', '.join(missing)}")
    steps = shown_steps(set().union(*curves), every)
    header = ["step", *(result.run_id for result in results)]
    rows = [[str(step), *(_format(values.get(step)) for values in curves)] for step in steps]
    return header, rows


def _format(value: float | None) -> str:
    if value is None:
        return "-"
    if not math.isfinite(value):
        return str(value)
    return f"{value:.6g}" if abs(value) < 1e-2 else f"{value:.4f}"


def render(header: list[str], rows: list[list[str]], markdown: bool) -> str:
    if markdown:
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows]
    else:
        lines = ["\t".join(header), *("\t".join(row) for row in rows)]
    return "\n".join(lines)
