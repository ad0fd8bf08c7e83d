"""Live progress of a run on stderr: the phase it is in (environment, data, compile /
warm-up, training), the current step, throughput, elapsed time and an ETA."""

from __future__ import annotations

import time

from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)

from harness.runner.observer import RunObserver

#: What a run is doing between the launch and its first logged step.
WARMUP_PHASE = "compile / warm-up"


def eta_seconds(first_step: int, first_time: float, step: int, now: float, total: int) -> float | None:
    """Seconds left at the pace since the first logged step; None before there is a pace."""
    done = step - first_step
    if done <= 0 or total <= step:
        return None if total > step else 0.0
    return (now - first_time) / done * (total - step)


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-:--"
    minutes, secs = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class ConsoleObserver(RunObserver):
    def __init__(self, registry, show_log: bool = False, console: Console | None = None):
        self.registry = registry
        self.show_log = show_log
        self.console = console or Console(stderr=True)
        self.progress: Progress | None = None
        self.task = None
        self.parser = None
        self.total = 0
        self.unit = ""
        self.last_plain = 0.0
        self.first: tuple[int, float] | None = None  # (step, time) of the first logged step
        self.report = None  # the RunReport, once the result is recorded

    # The bar exists from the first phase on, so a slow environment build or a long compile
    # shows what is happening instead of a frozen 0/N.
    def _bar(self) -> Progress:
        if self.progress is None:
            self.progress = Progress(
                SpinnerColumn(), TextColumn("[progress.description]{task.description}"), BarColumn(),
                MofNCompleteColumn(), TextColumn("{task.fields[speed]}"), TimeElapsedColumn(),
                TextColumn("ETA"), TimeRemainingColumn(),
                console=self.console, transient=False,
                # Redraw twice a second, not rich's default ten: on a small CPU box the training
                # processes should get the cycles, and steps rarely come faster than that.
                refresh_per_second=2,
            )
            self.task = self.progress.add_task("starting", total=None, speed="")
            self.progress.start()
        return self.progress

    @property
    def phase(self) -> str:
        """The description the bar shows now."""
        return self.progress.tasks[0].description if self.progress is not None else ""

    def stage(self, name: str, detail: str = "") -> None:
        self.console.print(f"[bold]{escape(name)}[/bold] {escape(detail)}", highlight=False)
        self._bar().update(self.task, description=f"{name}: {detail}" if detail else name)

    def start_repeat(self, context, total_steps: int, log_format: str) -> None:
        # The launch names its log format: one framework prints different lines per model.
        fmt = self.registry.log_formats.items.get(log_format)
        seq_len = context.config.params.get("seq_len")
        self.parser = fmt.new_parser(seq_len=seq_len) if fmt else None
        self.total = total_steps
        self.unit = context.case.unit
        self.first = None
        self._bar()
        self.progress.reset(self.task, total=total_steps, description=WARMUP_PHASE, speed="")
        if not self.console.is_terminal:
            self.console.print(f"{WARMUP_PHASE}: waiting for the first of {total_steps} steps",
                               highlight=False)

    def on_line(self, line: str, arrived: float | None = None) -> None:
        if self.show_log:
            self._bar().console.print(line.rstrip("\n"), markup=False, highlight=False)
        if self.parser is None:
            return
        record = self.parser.feed(line)
        if record is None:
            return
        now = time.monotonic()
        if self.first is None:
            self.first = (record.step, now)
        speed = f"{record.throughput:,.1f} {self.unit}" if record.throughput else ""
        if record.loss is not None:
            speed += f"  loss {record.loss:.4f}"
        self._bar().update(self.task, completed=record.step, speed=speed, description="training")
        if not self.console.is_terminal and now - self.last_plain > 5:
            # No live display off a terminal: an occasional plain line instead.
            self.last_plain = now
            eta = eta_seconds(*self.first, record.step, now, self.total)
            self.console.print(f"step {record.step}/{self.total} {speed}  ETA {format_duration(eta)}",
                               highlight=False)

    def recorded(self, report) -> None:
        self.report = report

    def end_repeat(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None
