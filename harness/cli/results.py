"""``harness results``: list, show and export recorded results."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.cli.state import app_state
from harness.cli.options import (DEFAULT_OUTPUT, CasesFilter, FrameworksFilter, OutputOption,
                                 StatusChoice, VendorsFilter, split_list)
from harness.errors import UserInputError

StatusFilter = Annotated[Optional[str], typer.Option(
    "--status", help="Only these statuses (comma-separated): "
                     + ", ".join(member.value for member in StatusChoice) + ".")]
SinceFilter = Annotated[Optional[str], typer.Option(
    help="Only runs started at or after this ISO date/time (UTC), e.g. 2026-11-21.")]

#: ``results list`` columns: (header, JSON key).
LIST_COLUMNS = (("run id", "run_id"), ("date", "started_at"), ("case", "case"),
                ("framework", "framework"), ("vendor", "vendor"), ("layout", "layout"),
                ("precision", "precision"), ("batch", "micro_batch_size"), ("scale", "scale"),
                ("status", "status"), ("FINAL_RESULT", "final_result"), ("unit", "unit"),
                ("MFU", "mfu"))


class ExportFormat(str, Enum):
    csv = "csv"
    jsonl = "jsonl"


def _statuses(text: str | None) -> list[str]:
    values = split_list(text, "--status")
    valid = [member.value for member in StatusChoice]
    for value in values:
        if value not in valid:
            raise UserInputError(f"--status: {value!r} is not one of {', '.join(valid)}")
    return values


def query(output: Path, case, framework, vendor, status, since, limit: int | None):
    """(result, run folder) pairs of the recorded runs that match, newest first."""
    import harness
    from harness.cli.report import parse_since
    from harness.store import ResultStore

    results = harness.results(output, case=split_list(case, "--case"),
                              framework=split_list(framework, "--framework"),
                              vendor=split_list(vendor, "--vendor"), status=_statuses(status),
                              since=parse_since(since), limit=limit)
    dirs = ResultStore(output).run_dirs()
    return [(result, dirs.get(result.run_id)) for result in results]


def list_row(result) -> dict:
    t, e = result.throughput, result.efficiency
    return {
        "run_id": result.run_id, "started_at": result.started_at.isoformat(), "case": result.case,
        "framework": result.framework, "vendor": result.vendor,
        "layout": f"{result.nnodes}x{result.nproc}", "precision": result.precision,
        "micro_batch_size": result.micro_batch_size, "scale": result.config.scale,
        "status": result.status, "final_result": t.value if t else None,
        "unit": t.unit if t else None, "mfu": e.mfu if e else None,
        "total_work": t.total_work if t else None, "config_hash": result.config_hash,
    }


group = typer.Typer(help="List, show and export recorded results.", no_args_is_help=True)


@group.command("list")
def list_command(
    output: OutputOption = DEFAULT_OUTPUT,
    case: CasesFilter = None,
    framework: FrameworksFilter = None,
    vendor: VendorsFilter = None,
    status: StatusFilter = None,
    since: SinceFilter = None,
    limit: Annotated[int, typer.Option(min=1, help="At most this many, newest first.")] = 50,
    json_output: Annotated[bool, typer.Option("--json", help="Print the rows as a JSON list.")] = False,
) -> None:
    """List recorded runs, newest first: case, framework, vendor, layout, precision, batch,
    scale, status, FINAL_RESULT, MFU and date."""
    rows = [list_row(result) for result, _ in query(output, case, framework, vendor, status,
                                                     since, limit)]
    if json_output:
        typer.echo(json.dumps(rows, indent=2))
        return
    from rich.table import Table

    from harness.cli.console import make_console

    table = Table(*(header for header, _ in LIST_COLUMNS))
    for row in rows:
        cells = []
        for _, key in LIST_COLUMNS:
            value = row[key]
            if key == "final_result":
                value = f"{value:,.2f}" if value is not None else "-"
            elif key == "mfu":
                value = f"{value:.1%}" if value is not None else "-"
            elif key == "started_at":
                value = value[:16].replace("T", " ")
            elif key == "status" and value != "success":
                value = f"[red]{value}[/red]"
            cells.append("-" if value is None else str(value))
        table.add_row(*cells)
    make_console().print(table)
    if not rows:
        typer.echo(f"no recorded runs match in {output}", err=True)


@group.command("show")
def show_command(
    run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix of one.")],
    output: OutputOption = DEFAULT_OUTPUT,
) -> None:
    """Print the full result JSON of one run."""
    import harness
    from harness.store import DB_NAME

    found = harness.results(output, run_id=run_id) if (output / DB_NAME).is_file() else []
    if not found:
        raise UserInputError(f"no single run matches {run_id!r} in {output}; see `harness results list`")
    typer.echo(found[0].model_dump_json(indent=2))


@group.command("curves")
def curves_command(
    run_ids: Annotated[list[str], typer.Argument(help="Run ids or unique prefixes, one column each.")],
    output: OutputOption = DEFAULT_OUTPUT,
    curve: Annotated[str, typer.Option(help="Which curve: loss or learning_rate.")] = "loss",
    every: Annotated[int, typer.Option(help="Show the first and last step and every N-th step.")] = 1,
    markdown: Annotated[bool, typer.Option("--markdown", help="A Markdown table instead of tab-separated text.")] = False,
) -> None:
    """Print per-step curves (loss or learning rate) of one or more runs side by side, one row
    per step.

    [bold]harness results curves RUN1 RUN2 --every 10 --markdown[/bold]
    """
    from harness.curves import curve_table, describe, render
    from harness.store import ResultStore

    store = ResultStore(output)
    results = []
    for run_id in run_ids:
        result = store.get(run_id)
        if result is None:
            raise UserInputError(f"no single run matches {run_id!r} in {output}; see `harness results list`")
        results.append(result)
    header, rows = curve_table(results, curve, every)
    for result in results:
        typer.echo(f"{'<!-- ' if markdown else '# '}{result.run_id}: {describe(result)}{' -->' if markdown else ''}")
    typer.echo(render(header, rows, markdown))


@group.command("export")
def export_command(
    ctx: typer.Context,
    output: OutputOption = DEFAULT_OUTPUT,
    format_: Annotated[ExportFormat, typer.Option(
        "--format", help="csv (a header row, then one row per run) or jsonl (one JSON "
                         "object per line).")] = ExportFormat.csv,
    to: Annotated[Optional[Path], typer.Option(
        help="Write the table to this file (default: stdout).")] = None,
    repeats: Annotated[bool, typer.Option(
        "--repeats", help="One row per repeat instead of per run (repeat_* columns added).")] = False,
    tensorboard: Annotated[Optional[Path], typer.Option(
        help="Also write TensorBoard event files into this folder, one sub-folder per run: "
             "loss, throughput, learning rate and step time per step, the device "
             "monitor's memory, power and utilisation, and the run's metadata (needs the "
             "tensorboard extra).")] = None,
    wandb: Annotated[Optional[Path], typer.Option(
        help="Also write Weights & Biases offline runs into this folder (DIR/wandb/"
             "offline-run-*): the same series as --tensorboard, the metadata as the run's "
             "config; no account, nothing sent (`wandb sync` uploads them). Needs the "
             "wandb extra.")] = None,
    mlflow: Annotated[Optional[Path], typer.Option(
        help="Also write the runs into an MLflow file store in this folder (experiment "
             "'harness'): the same series as --tensorboard as metrics, the metadata as "
             "params and tags; no server. Needs the mlflow extra (mlflow-skinny).")] = None,
    case: CasesFilter = None,
    framework: FrameworksFilter = None,
    vendor: VendorsFilter = None,
    status: StatusFilter = None,
    since: SinceFilter = None,
) -> None:
    """Export recorded runs with stable column names (listed in docs/results.md), and
    optionally to experiment trackers: TensorBoard event files, W&B offline runs, an MLflow
    file store (docs/trackers.md). With a tracker and without --to, no table is printed.

    [bold]harness results export --format csv --to runs.csv[/bold]

    [bold]harness results export --format jsonl --repeats --case gpt3_125M[/bold]

    [bold]harness results export --tensorboard tb/ && tensorboard --logdir tb/[/bold]

    [bold]harness results export --wandb wandb-runs/ --mlflow mlruns/[/bold]
    """
    from harness.export.table import export_rows, to_csv, to_jsonl, write_export

    if to is not None and to.is_dir():
        raise UserInputError(f"--to {to} is a folder; give a file name, e.g. {to / 'runs.csv'}")
    if to is not None and to.parent.exists() and not to.parent.is_dir():
        raise UserInputError(f"--to {to}: {to.parent} is a file, not a folder")
    trackers = {option: folder for option, folder in (
        ("--tensorboard", tensorboard), ("--wandb", wandb), ("--mlflow", mlflow)) if folder is not None}
    for option, folder in trackers.items():
        if folder.exists() and not folder.is_dir():
            raise UserInputError(f"{option} {folder} is a file; give a folder (it is created "
                                 "if missing)")
    selected = query(output, case, framework, vendor, status, since, None)
    rows = export_rows(selected, per_repeat=repeats)
    if trackers:
        _export_to_trackers(trackers, selected, app_state(ctx).registry())
        if to is None:
            return  # a tracker export alone prints no table
    try:
        write_export(to_csv(rows, repeats) if format_ is ExportFormat.csv else to_jsonl(rows), to)
    except OSError as exc:
        raise UserInputError(f"--to {to}: cannot write it ({exc.strerror or exc}); give a "
                             "file in a writable folder, or leave --to out for stdout") from None
    if to is not None:
        typer.echo(f"{len(rows)} rows -> {to}", err=True)


#: Tracker option -> (exporting function's module and name, what to view the folder with).
TRACKERS = {
    "--tensorboard": ("harness.export.tensorboard", "export_tensorboard", "tensorboard --logdir {}"),
    "--wandb": ("harness.export.wandb_runs", "export_wandb", "wandb sync {}/wandb/offline-run-*"),
    "--mlflow": ("harness.export.mlflow_store", "export_mlflow",
                 "MLFLOW_ALLOW_FILE_STORE=true mlflow ui --backend-store-uri {}"),
}


def _export_to_trackers(trackers: dict[str, Path], selected, registry) -> None:
    """Write the selected runs to each tracker's folder, one line each on stderr."""
    import importlib

    from harness.report.data import ReportRun
    from harness.report.steps import log_step_reader

    runs = [ReportRun(result, Path(folder) if folder else None) for result, folder in selected]
    read_steps = log_step_reader(registry)
    for option, folder in trackers.items():
        module, function, view = TRACKERS[option]
        export = getattr(importlib.import_module(module), function)
        written = export(runs, folder, read_steps)
        kept = f", {written.already} exported before and left as they are" if written.already else ""
        typer.echo(f"{option.lstrip('-')}: {written.runs} runs -> {folder} ({written.step_values} "
                   f"step values, {written.device_values} device samples{kept}); view with: "
                   + view.format(folder), err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="results")
