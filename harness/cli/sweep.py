"""``harness sweep``: a matrix of runs from comma-separated lists or a TOML sweep file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.cli.state import app_state
from harness.cli.options import (DEFAULT_OUTPUT, PRECISIONS, DataDirOption, EnvChoice, EnvOption,
                                 OutputOption, ScaleChoice, SetOption, ShowLogOption, WheelhouseOption,
                                 split_list)
from harness.errors import UserInputError, did_you_mean

HELP = """Run a matrix of benchmark runs, one after another.

The matrix is the product of the comma-separated lists, or of a sweep TOML file's \\[matrix]
(see sweeps/ for the seeds' tables); lists given on the command line replace that field of
the file. Points this machine cannot run are listed as skipped with the reason. Runs already
recorded with the same resolved-config hash are skipped, so an interrupted sweep (Ctrl-C)
resumes where it stopped when started again. A failing run does not stop the sweep.

A --set value with commas is an axis too (hydra style): --set recompute=full,none runs
every point once with each value.

Examples:

harness sweep --case gpt3_125M --scale smoke --precision fp32,bf16 --micro-batch-size 4,8 --nproc 1,2
harness sweep --case gpt3_125M --scale smoke --set recompute=full,none
harness sweep sweeps/ngc_bert_base.toml --vendor cpu --scale smoke --dry-run
"""


def _check_names(names: list[str], catalog, option: str) -> None:
    for name in names:
        if name.split(":", 1)[0] not in catalog:
            raise UserInputError(f"{option}: unknown {catalog.kind} {name!r}. "
                                 + did_you_mean(name, catalog.items))


def sweep_command(
    ctx: typer.Context,
    file: Annotated[Optional[Path], typer.Argument(
        help="Sweep TOML file (optional when --case is given).")] = None,
    case: Annotated[Optional[str], typer.Option(help="Cases, comma-separated.")] = None,
    framework: Annotated[Optional[str], typer.Option(help="Frameworks, comma-separated.")] = None,
    vendor: Annotated[Optional[str], typer.Option(help="Vendors, comma-separated (default cpu).")] = None,
    nproc: Annotated[Optional[str], typer.Option(help="Processes per node, e.g. 1,2,8.")] = None,
    nnodes: Annotated[Optional[str], typer.Option(help="Nodes, e.g. 1,4.")] = None,
    precision: Annotated[Optional[str], typer.Option(
        help=f"Precisions, comma-separated: {','.join(PRECISIONS)}.")] = None,
    micro_batch_size: Annotated[Optional[str], typer.Option(
        "--micro-batch-size", "--batch-size",
        help="Micro batch sizes per process, e.g. 32,48 (--batch-size is the same option).")] = None,
    scale: Annotated[Optional[ScaleChoice], typer.Option(
        help="smoke shrinks every case for a CPU (default: the file's, else full).")] = None,
    max_steps: Annotated[Optional[int], typer.Option(min=1, help="Optimizer steps of every run.")] = None,
    repeat: Annotated[Optional[int], typer.Option(
        min=1, help="Repeats per run (default: the file's, else 3 on accelerators at full "
                    "scale and 1 otherwise); the median is reported.")] = None,
    set_: SetOption = None,
    output: OutputOption = DEFAULT_OUTPUT,
    data_dir: DataDirOption = None,
    wheelhouse: WheelhouseOption = None,
    env: EnvOption = EnvChoice.auto,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Show the matrix, what would be skipped and why, and stop.")] = False,
    rerun: Annotated[bool, typer.Option(
        "--rerun", help="Run points again even when they are already recorded.")] = False,
    show_log: ShowLogOption = False,
) -> None:
    from harness.cli.console import make_console
    from harness.config_resolution import parse_set_pairs
    from harness.envs.wheelhouse import wheelhouse_from
    from harness.sweep.planner import SweepOptions, plan_sweep
    from harness.sweep.spec import SweepSpec, apply_cli_axes, load_sweep_file, set_values

    spec = load_sweep_file(file) if file else SweepSpec(name="cli")
    registry = app_state(ctx).registry()
    axes = {
        "case": split_list(case, "--case"),
        "framework": split_list(framework, "--framework"),
        "vendor": split_list(vendor, "--vendor"),
        "nproc": split_list(nproc, "--nproc", int),
        "nnodes": split_list(nnodes, "--nnodes", int),
        "precision": split_list(precision, "--precision"),
        "micro_batch_size": split_list(micro_batch_size, "--micro-batch-size", int),
    }
    _check_names(axes["case"], registry.cases, "--case")
    _check_names(axes["framework"], registry.frameworks, "--framework")
    _check_names(axes["vendor"], registry.vendors, "--vendor")
    for value in axes["precision"]:
        if value not in PRECISIONS:
            raise UserInputError(f"--precision: {value!r} is not one of {', '.join(PRECISIONS)}")
    overrides: dict = {}
    if scale is not None:
        overrides["scale"] = scale.value
    if max_steps is not None:
        overrides["max_steps"] = max_steps
    if repeat is not None:
        overrides["repeat"] = repeat
    set_axes: dict[str, list[str]] = {}
    if set_:
        single = {}
        for key, raw in parse_set_pairs(list(set_)).items():
            values = set_values(raw)
            if len(values) > 1:
                set_axes[key] = values  # hydra style: --set recompute=full,none is an axis
            else:
                single[key] = values[0]
        if single:
            overrides["set"] = single
    points = apply_cli_axes(spec.expand(), axes, overrides, set_axes)
    if not file and not axes["case"]:
        raise UserInputError("give a sweep file or --case (see `harness sweep --help`)")

    console = make_console(stderr=True)
    out = make_console()
    options = SweepOptions(
        output=output, data_dir=data_dir, env_mode=env.value, rerun=rerun,
        wheelhouse=wheelhouse_from(wheelhouse),  # a missing folder stops the sweep, not each run
        sweep_file=file.name if file else None,
        cli_fields=frozenset({axis for axis, values in axes.items() if values}
                             | (set(overrides) - {"set"})),
        cli_set_keys=frozenset(set(set_axes) | set(overrides.get("set", {}))))
    planned = plan_sweep(app_state(ctx).harness(), points, options)
    todo = sum(1 for p in planned if p.state == "todo")
    counts = {s: sum(1 for p in planned if p.state == s) for s in ("done", "skipped", "invalid")}
    console.print(
        f"sweep [bold]{spec.name}[/bold]: {len(planned)} points, {todo} to run, "
        f"{counts['done']} already recorded, {counts['skipped']} skipped, "
        f"{counts['invalid']} invalid", highlight=False)
    for point in planned:  # a recorded run whose folder is damaged runs again
        if point.state == "todo" and point.reason:
            console.print(f"warning: point {point.index}: {point.reason}", highlight=False,
                          markup=False, soft_wrap=True)
    if dry_run:
        from harness.sweep.runner import SweepRow, row_from_recorded

        rows = [row_from_recorded(p) if p.state == "done" else
                SweepRow(p, "to run" if p.state == "todo" else p.state, p.reason) for p in planned]
        out.print(summary_table(rows, title=f"sweep {spec.name} (dry run)"))
        return
    from harness.cli.progress import ConsoleObserver
    from harness.sweep.runner import run_sweep

    summary = run_sweep(
        app_state(ctx).harness(), spec.name, planned, options, source=spec.source,
        observer_factory=lambda: ConsoleObserver(registry, show_log=show_log, console=console),
        emit=lambda text: console.print(f"[bold cyan]{text}[/bold cyan]", highlight=False),
    )
    out.print(summary_table(summary.rows, title=f"sweep {spec.name}"))
    ran = summary.count("success", "failed", "timeout", "hang", "interrupted", "terminated")
    console.print(
        f"{ran} ran: {summary.count('success')} succeeded, {len(summary.failed_rows)} failed; "
        f"{summary.count('done')} already recorded; {summary.count('skipped')} skipped"
        + (f"; {summary.count('not run')} not run" if summary.interrupted else ""),
        highlight=False)
    if summary.interrupted:
        console.print("interrupted: run the same command again to resume "
                      "(recorded runs are skipped)", highlight=False)
    if summary.exit_code:
        raise typer.Exit(summary.exit_code)


def register(app: typer.Typer) -> None:
    app.command('sweep', help=HELP)(sweep_command)


def summary_table(rows, title: str):
    """One line per point: where it ran, its status and FINAL_RESULT, or why it did not run."""
    from rich.table import Table

    units = {row.unit for row in rows if row.unit}
    value_header = f"FINAL_RESULT ({units.pop()})" if len(units) == 1 else "FINAL_RESULT"
    table = Table(title=title, title_justify="left")
    for column in ("#", "case", "framework", "layout", "precision", "batch", "status", value_header):
        table.add_column(column, justify="right" if column in ("#", value_header) else "left")
    table.add_column("note", overflow="fold", ratio=1)
    styles = {"success": "green", "done": "green", "skipped": "yellow", "to run": "cyan"}
    # --set keys whose value differs between points (a hydra-style axis) name each point
    seen: dict[str, set] = {}
    for row in rows:
        for key, value in row.planned.point.set:
            seen.setdefault(key, set()).add(value)
    varying = {key for key, values in seen.items() if len(values) > 1}
    for row in rows:
        point = row.planned.point
        settings = row.planned.context.config.settings if row.planned.context else None
        layout = (f"{settings.nnodes}x{settings.nproc}" if settings
                  else f"{point.nnodes or 1}x{point.nproc or '?'}")
        framework = row.planned.context.framework if row.planned.context else (point.framework or "-")
        case = point.case or "-"
        if point.label:
            case = f"{case} \\[{point.label}]"
        axes = [f"{key}={value}" for key, value in point.set
                if key in varying and f"{key}={value}" not in (point.label or "")]
        if axes:
            case = f"{case} " + " ".join(axes)
        value = f"{row.value:,.1f}" if row.value is not None else "-"
        note = (f"recorded before; {row.reason}" if row.reason else "recorded before") \
            if row.status == "done" else (row.reason or "")
        style = styles.get(row.status, "red")
        table.add_row(
            str(row.planned.index), case, framework, layout,
            settings.precision if settings else (point.precision or "-"),
            str(settings.micro_batch_size if settings else (point.micro_batch_size or "-")),
            f"[{style}]{row.status}[/{style}]", value, note,
        )
    return table
