"""Progress events of a run: the CLI shows them, sweeps decorate them, tests may ignore them."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.models.context import RunContext
    from harness.runner.request import RunReport
    from harness.witness import Witness


class RunObserver:
    """Receives progress events; every method does nothing unless a subclass overrides it."""

    def stage(self, name: str, detail: str = "") -> None:  # noqa: D401 - simple hook
        pass

    def start_repeat(self, context: RunContext, total_steps: int, log_format: str) -> None:
        pass

    def on_line(self, line: str, arrived: float | None = None) -> None:
        """One output line; ``arrived``: the ``time.monotonic()`` at which it was read from the
        training process's pipe (``None``: now)."""

    def end_repeat(self) -> None:
        pass

    def recorded(self, report: RunReport) -> None:
        """The run's result is written: ``report`` says where (run folder, legacy index) and
        anything the user should know that the result does not say."""


class StepClock(RunObserver):
    """Passes every event on to ``inner`` and notes when each training step's line arrived.

    The core hands this to ``execute``: ``step_times`` maps a step to the ``time.monotonic()``
    at which its line was read (the log's own timestamps, where it has any, are another
    clock; the reader's, where ``execute`` passes it, so a busy harness does not delay them),
    and ``measured_window`` turns them into the span of the measured steps, over which
    a vendor's device monitor can summarise its samples (compilation and start-up then stay out).
    """

    def __init__(self, inner: RunObserver, log_formats: dict[str, Any]):
        self.inner = inner
        self.log_formats = log_formats
        self.step_times: dict[int, float] = {}
        self.step_records = 0  # step records seen arriving (a replayed or edited log differs)
        self._captured = hashlib.sha256()  # of every line as it arrived, before any wrapper
        self._parser = None
        # Where the core's execute writes the log as captured; the hook's log_path (what an
        # execute wrapper sees) gets a copy. capture_done: the core's execute ran.
        self.capture_path: Path | None = None
        self.capture_done = False

    def stage(self, name: str, detail: str = "") -> None:
        self.inner.stage(name, detail)

    def start_repeat(self, context: RunContext, total_steps: int, log_format: str) -> None:
        fmt = self.log_formats.get(log_format)
        self._parser = fmt.new_parser(seq_len=context.config.params.get("seq_len")) if fmt else None
        self.step_times = {}
        self.step_records = 0
        self._captured = hashlib.sha256()
        self.inner.start_repeat(context, total_steps, log_format)

    def on_line(self, line: str, arrived: float | None = None) -> None:
        self._captured.update(line.encode("utf-8"))
        if self._parser is not None:
            record = self._parser.feed(line)
            if record is not None:
                self.step_records += 1
                self.step_times.setdefault(record.step, time.monotonic() if arrived is None else arrived)
        self.inner.on_line(line)

    def witness(self, config, unit: str) -> Witness:
        """What this clock saw of the repeat: the captured output's sha256, the step records
        and the rate of the measured steps by their arrival times."""
        from harness.witness import Witness, median_step_gap, timed_rate, units_per_iteration

        skip = config.settings.skip_steps
        timed = timed_rate(self.step_times, skip, units_per_iteration(config, unit))
        return Witness(log_sha256=self._captured.hexdigest(), step_records=self.step_records,
                       timed_throughput=timed[0] if timed else None, window_s=timed[1] if timed else None,
                       median_step_s=median_step_gap(self.step_times, skip) if timed else None)

    def end_repeat(self) -> None:
        self.inner.end_repeat()

    def measured_window(self, skip_steps: int) -> tuple[float, float] | None:
        """``(start, end)`` in ``time.monotonic()`` seconds: from the line of the last skipped
        step (the first step's line when none is skipped) to the last step's line; ``None``
        when fewer than two steps were seen after the skipped ones."""
        measured = sorted(s for s in self.step_times if s > skip_steps)
        if not measured:
            return None
        before = [s for s in self.step_times if s <= skip_steps]
        start_step = max(before) if before else measured.pop(0)
        if not measured:
            return None
        return self.step_times[start_step], self.step_times[measured[-1]]
