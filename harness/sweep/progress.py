"""Overall progress of a sweep ("run k of n, elapsed, estimate") above each run's own display.

``SweepObserver`` wraps the observer of a single run (e.g. the CLI's ``ConsoleObserver``) and
prints the sweep's headline before every run and repeat, so it sits above that run's
progress bar; it does not replace or reimplement the per-run display.
"""

from __future__ import annotations

import time
from typing import Callable

from harness.runner.observer import RunObserver


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class SweepProgress:
    """Counts runs, times them, and estimates the time left from the mean run so far."""

    def __init__(self, total: int, clock: Callable[[], float] = time.monotonic):
        self.total = total
        self.clock = clock
        self.started = clock()
        self.current = 0
        self.durations: list[float] = []
        self._run_started: float | None = None

    def start_run(self) -> None:
        self.current += 1
        self._run_started = self.clock()

    def end_run(self) -> None:
        if self._run_started is not None:
            self.durations.append(self.clock() - self._run_started)
            self._run_started = None

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    def estimate_left(self) -> float | None:
        """Seconds left: mean duration of finished runs times the runs not yet finished."""
        if not self.durations:
            return None
        remaining = self.total - len(self.durations)
        return sum(self.durations) / len(self.durations) * remaining

    def headline(self, description: str = "") -> str:
        left = self.estimate_left()
        estimate = (f"about {format_duration(left)} left" if left is not None
                    else "estimate after the first run")
        text = (f"sweep: run {self.current} of {self.total} | elapsed "
                f"{format_duration(self.elapsed)} | {estimate}")
        return f"{text} | {description}" if description else text


class SweepObserver(RunObserver):
    """Forwards every event to ``inner`` and prints the sweep headline above each repeat."""

    def __init__(self, inner: RunObserver, progress: SweepProgress,
                 emit: Callable[[str], None], description: str = ""):
        self.inner = inner
        self.progress = progress
        self.emit = emit
        self.description = description

    def stage(self, name: str, detail: str = "") -> None:
        self.inner.stage(name, detail)

    def start_repeat(self, context, total_steps: int, log_format: str) -> None:
        if context.repeat_index > 1:
            self.emit(self.progress.headline(f"{self.description}, repeat {context.repeat_index}"))
        self.inner.start_repeat(context, total_steps, log_format)

    def on_line(self, line: str, arrived: float | None = None) -> None:
        self.inner.on_line(line)

    def end_repeat(self) -> None:
        self.inner.end_repeat()
