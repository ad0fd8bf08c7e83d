"""Consoles for command output: wide enough off a terminal that tables are not truncated."""

from __future__ import annotations

from rich.console import Console


def make_console(stderr: bool = False) -> Console:
    console = Console(stderr=stderr)
    if not console.is_terminal:
        # Piped or captured output: keep full run ids and numbers rather than ellipses.
        console = Console(stderr=stderr, width=220)
    return console
