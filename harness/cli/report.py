"""``harness report``: tables, charts and environment of recorded runs as Markdown and HTML."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.cli.state import app_state
from harness.cli.options import (DEFAULT_OUTPUT, CasesFilter, FrameworksFilter, OutputOption,
                                 SweepsFilter, VendorsFilter, split_list)
from harness.errors import UserInputError


def parse_since(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise UserInputError(f"--since expects an ISO date or time, e.g. 2026-11-21 or "
                             f"2026-11-21T22:00; got {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


def filters_from_options(case, framework, vendor, sweep, run, since):
    from harness.report.data import ReportFilter

    return ReportFilter(cases=split_list(case, "--case"), frameworks=split_list(framework, "--framework"),
                        vendors=split_list(vendor, "--vendor"), sweeps=split_list(sweep, "--sweep"),
                        run_ids=split_list(run, "--run"), since=parse_since(since))


def report_command(
    ctx: typer.Context,
    output: OutputOption = DEFAULT_OUTPUT,
    report_dir: Annotated[Optional[Path], typer.Option(
        "--report-dir", "--out", help="Folder to write report.md, report.html and charts/ "
                                      "into (default: report/ inside the results folder).")] = None,
    history: Annotated[bool, typer.Option(
        "--history", help="Add the history: throughput over time of every configuration "
                          "recorded more than once, and regressions beyond noise.")] = False,
    case: CasesFilter = None,
    framework: FrameworksFilter = None,
    vendor: VendorsFilter = None,
    sweep: SweepsFilter = None,
    run: Annotated[Optional[str], typer.Option(help="Only these run ids (or prefixes).")] = None,
    since: Annotated[Optional[str], typer.Option(help="Only runs started at or after this "
                                                      "ISO date/time (UTC).")] = None,
    noise_threshold: Annotated[float, typer.Option(
        min=0, help="Flag runs whose repeats (or a single repeat's step times) vary more "
                    "than this many percent (CV).")] = 3.0,
    max_step_charts: Annotated[int, typer.Option(min=0, help="At most this many per-step charts.")] = 24,
    title: Annotated[str, typer.Option(help="Report title.")] = "harness benchmark report",
) -> None:
    """Write report.md and a self-contained report.html (inline CSS and SVG charts) from the
    results database and run folders: seed-style speed and memory tables per case and
    framework, latency tables for parallel-layout sweeps, scaling / batch-size / per-step
    throughput and loss charts, noise flags and the environment. Regenerate it at any time.

    [bold]harness report[/bold]  (results/ -> results/report/)

    [bold]harness report --output results-h100/ --case gpt3_125M --history[/bold]
    """
    from harness.report import generate_report
    from harness.report.build import ReportOptions
    from harness.store import DB_NAME

    if not (output / DB_NAME).exists():
        raise UserInputError(f"no results database at {output / DB_NAME}; pass --output with "
                             "the folder `harness run`/`harness sweep` wrote to")
    filters = filters_from_options(case, framework, vendor, sweep, run, since)
    options = ReportOptions(noise_threshold=noise_threshold / 100.0,
                            max_step_charts=max_step_charts, title=title, history=history)
    out = report_dir if report_dir is not None else output / "report"
    written = generate_report(output, out, filters, options, registry=app_state(ctx).registry())
    for damage in written.damaged:
        typer.echo(f"warning: run {damage}; its log and per-step charts are missing", err=True)
    if written.runs == 0:
        typer.echo(f"warning: no recorded runs match ({filters.describe()}); the report is empty",
                   err=True)
    typer.echo(f"{written.runs} runs -> {written.markdown} and {written.html}")


def register(app: typer.Typer) -> None:
    app.command('report')(report_command)
