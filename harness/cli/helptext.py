"""Command help as flowing paragraphs.

Docstrings and help texts are wrapped at the source's line length; the rich help keeps their
line breaks, so a command's help would break mid-sentence wherever the source did. Each
paragraph is joined into one line (the terminal wraps it); a paragraph of example command
lines keeps its lines, and so does an indented block such as a table (one line a row).
"""

from __future__ import annotations

import inspect

import typer


def flowing(text: str) -> str:
    """``text`` with the line breaks inside each paragraph removed, except in paragraphs whose
    lines are examples (indented, or starting with ``harness ``)."""
    joined = []
    for paragraph in text.strip().split("\n\n"):
        lines = paragraph.splitlines()
        if any(line.startswith((" ", "harness ")) for line in lines):
            joined.append(paragraph)
        else:
            joined.append(" ".join(line.strip() for line in lines))
    return "\n\n".join(joined)


def flow_help(app: typer.Typer) -> None:
    """Make the help of every command of ``app`` and of its groups flowing text: the ``help=``
    given, else the command's docstring."""
    for command in app.registered_commands:
        text = command.help or (inspect.getdoc(command.callback) if command.callback else None)
        if text:
            command.help = flowing(text)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            flow_help(group.typer_instance)
