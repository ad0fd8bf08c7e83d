"""``harness benchmarks``: BENCHMARKS.md from committed result files (``harness.report.benchmarks``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def benchmarks_command(
    tables: Annotated[Path, typer.Argument(
        help="Tables file naming each table's result files (paths relative to its folder).")]
    = Path("benchmarks/tables.toml"),
    to: Annotated[Path, typer.Option("--to", help="Markdown file to write.")] = Path("BENCHMARKS.md"),
    check: Annotated[bool, typer.Option(
        "--check", help="Write nothing; exit 1 when the file differs from what would be written.")] = False,
) -> None:
    """Write BENCHMARKS.md: one table per topic from committed result files, each row with
    case, framework, device, precision, layout, throughput, MFU, memory, date, harness
    commit, run id and the command, plus side-by-side runs and published anchors with ratios.

    harness benchmarks                  (benchmarks/tables.toml -> BENCHMARKS.md)

    harness benchmarks --check          (exit 1 when BENCHMARKS.md is stale)
    """
    from harness.report.benchmarks import render
    from harness.results_io import atomic_write_text

    text = render(tables)
    if check:
        current = to.read_text(encoding="utf-8") if to.is_file() else None
        if current != text:
            typer.echo(f"{to} is stale: run `harness benchmarks {tables} --to {to}`", err=True)
            raise typer.Exit(1)
        typer.echo(f"{to} is up to date")
        return
    atomic_write_text(to, text)
    typer.echo(f"wrote {to}")


def register(app: typer.Typer) -> None:
    app.command("benchmarks")(benchmarks_command)
