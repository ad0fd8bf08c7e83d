"""Progress events of a run: the CLI shows them, sweeps decorate them, tests may ignore them."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from harness.models.context import RunContext


class RunObserver:
    """Receives progress events; every method does nothing unless a subclass overrides it."""

    def stage(self, name: str, detail: str = "") -> None:  # noqa: D401 - simple hook
        pass

    def start_repeat(self, context: RunContext, total_steps: int, log_format: str) -> None:
        pass

    def on_line(self, line: str) -> None:
        pass

    def end_repeat(self) -> None:
        pass
