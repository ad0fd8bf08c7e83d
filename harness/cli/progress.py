"""Live progress of a run: current step, throughput, elapsed; on stderr."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from harness.runner.observer import RunObserver


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

    def stage(self, name: str, detail: str = "") -> None:
        self.console.print(f"[bold]{name}[/bold] {detail}", highlight=False)

    def start_repeat(self, context, total_steps: int, log_format: str) -> None:
        # The launch names its log format: one framework prints different lines per model.
        fmt = self.registry.log_formats.items.get(log_format)
        seq_len = context.config.params.get("seq_len")
        self.parser = fmt.new_parser(seq_len=seq_len) if fmt else None
        self.total = total_steps
        self.unit = context.case.unit
        self.progress = Progress(
            TextColumn("[progress.description]{task.description}"), BarColumn(),
            MofNCompleteColumn(), TextColumn("{task.fields[speed]}"), TimeElapsedColumn(),
            console=self.console, transient=False,
            # Redraw twice a second, not rich's default ten: on a small CPU box the training
            # processes should get the cycles, and steps rarely come faster than that.
            refresh_per_second=2,
        )
        self.task = self.progress.add_task("training", total=total_steps, speed="")
        self.progress.start()

    def on_line(self, line: str) -> None:
        if self.show_log:
            self.progress.console.print(line.rstrip("\n"), markup=False, highlight=False)
        if self.parser is None:
            return
        record = self.parser.feed(line)
        if record is None:
            return
        speed = f"{record.throughput:,.1f} {self.unit}" if record.throughput else ""
        if record.loss is not None:
            speed += f"  loss {record.loss:.4f}"
        self.progress.update(self.task, completed=record.step, speed=speed)
        if not self.console.is_terminal and time.monotonic() - self.last_plain > 5:
            # No live display off a terminal: an occasional plain line instead.
            self.last_plain = time.monotonic()
            self.console.print(f"step {record.step}/{self.total} {speed}", highlight=False)

    def end_repeat(self) -> None:
        if self.progress is not None:
            self.progress.stop()
