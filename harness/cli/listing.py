"""``harness list``: cases, frameworks, vendors and log formats that plugins registered."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Annotated, Optional

import typer

from harness.cli.state import app_state
from harness.cli.options import FrameworksFilter, split_list


def print_table(columns: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> None:
    """One rich table on stdout, wide enough off a terminal that nothing is cut. Cells are
    plain text: a description's ``[train]`` is printed, not read as rich markup."""
    from rich.table import Table
    from rich.text import Text

    from harness.cli.console import make_console

    table = Table(*columns)
    for row in rows:
        table.add_row(*(Text(str(cell)) for cell in row))
    make_console().print(table)


def by_name(catalog) -> list[tuple[str, object]]:
    """(name, registered object) pairs of a registry catalog, in name order."""
    return [(name, catalog.items[name]) for name in catalog.names()]


def headline_first(cases: list[tuple[str, object]]) -> list[tuple[str, object]]:
    """Headline cases (``CaseSpec.headline``) before the rest, each part in name order."""
    return sorted(cases, key=lambda item: not getattr(item[1], "headline", False))


group = typer.Typer(help="List what the loaded plugins provide: cases, frameworks, vendors and "
                         "log formats (all four without a subcommand).",
                    invoke_without_command=True)


@group.callback()
def list_everything(ctx: typer.Context) -> None:
    """Without a subcommand: every list, one after another."""
    if ctx.invoked_subcommand is not None:
        return
    for title, command in (("Cases", lambda: cases_command(ctx)),
                           ("Frameworks", lambda: frameworks_command(ctx)),
                           ("Vendors", lambda: vendors_command(ctx)),
                           ("Log formats", lambda: formats_command(ctx))):
        typer.echo(f"{title}:")
        command()


@group.command("cases")
def cases_command(
    ctx: typer.Context,
    model: Annotated[Optional[str], typer.Option(
        help="Only cases of these model families (comma-separated), e.g. gpt,bert.")] = None,
    framework: FrameworksFilter = None,
    all_cases: Annotated[bool, typer.Option(
        "--all/--headline", help="Every case, or only the headline cases (GPT-3 sizes, "
                                 "BERT-base, CNNs) without parallel-layout matrices.")] = True,
    json_output: Annotated[bool, typer.Option("--json", help="Print the cases as a JSON list.")] = False,
) -> None:
    """Cases with their model, unit and the frameworks that implement them; the headline
    cases first."""
    registry = app_state(ctx).registry()
    models, frameworks = split_list(model, "--model"), split_list(framework, "--framework")
    for name in frameworks:
        if name not in registry.frameworks:
            from harness.errors import UserInputError, did_you_mean

            raise UserInputError(f"--framework: unknown framework {name!r}. "
                                 + did_you_mean(name, registry.frameworks.items))
    rows = []
    for name, case in headline_first(by_name(registry.cases)):
        implementations = registry.frameworks_for(case)
        if models and case.model not in models:
            continue
        if frameworks and not set(frameworks) & set(implementations):
            continue
        if not all_cases and not case.headline:
            continue
        rows.append({"case": name, "model": case.model, "unit": case.unit,
                     "frameworks": list(implementations),
                     "left_out": registry.frameworks_left_out(case), "headline": case.headline,
                     "description": case.description})
    if json_output:
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        return
    print_table(("case", "model", "unit", "frameworks", "description"),
                ((("* " if row["headline"] else "  ") + row["case"], row["model"], row["unit"],
                  ", ".join(row["frameworks"]) + ("+" if row["left_out"] else "") or "-",
                  row["description"]) for row in rows))
    if not rows:
        typer.echo("no case matches the filters", err=True)
        return
    if any(row["headline"] for row in rows):
        typer.echo("* headline case", err=True)
    left_out = _left_out_notes(rows, registry)
    if left_out:
        typer.echo("+ frameworks that implement the model but not the case's layout are left out:",
                   err=True)
        for line in left_out:
            typer.echo(f"  {line}", err=True)


def _left_out_notes(rows: list[dict], registry) -> list[str]:
    """One line per framework left out of listed cases: how many, for which layouts, and
    what it runs instead."""
    lacking: dict[str, set[str]] = {}
    counts: dict[str, int] = {}
    for row in rows:
        for framework, dimensions in row["left_out"].items():
            lacking.setdefault(framework, set()).update(dimensions)
            counts[framework] = counts.get(framework, 0) + 1
    notes = []
    for framework in sorted(lacking):
        runs = registry.frameworks.get(framework).model_parallel
        instead = (f"{' and '.join(sorted(runs))} parallel besides data parallel" if runs
                   else "data parallel only")
        notes.append(f"{framework}: {counts[framework]} case(s) asking for "
                     f"{' or '.join(sorted(lacking[framework]))} parallel (it runs {instead})")
    return notes


@group.command("frameworks")
def frameworks_command(ctx: typer.Context) -> None:
    """Frameworks and the model families they implement."""
    frameworks = app_state(ctx).registry().frameworks
    print_table(("framework", "models", "log format", "plugin"),
                ((name, ", ".join(sorted(fw.models)), fw.log_format, frameworks.owners[name])
                 for name, fw in by_name(frameworks)))


@group.command("vendors")
def vendors_command(ctx: typer.Context) -> None:
    """Vendors and their device kind."""
    vendors = app_state(ctx).registry().vendors
    print_table(("vendor", "devices", "description", "plugin"),
                ((name, v.device_kind, v.description, vendors.owners[name])
                 for name, v in by_name(vendors)))


@group.command("formats")
def formats_command(ctx: typer.Context) -> None:
    """Log formats that `harness parse` and progress display understand."""
    formats = app_state(ctx).registry().log_formats
    print_table(("format", "unit", "default method", "description"),
                ((name, f.unit or "-", f.default_method, f.description)
                 for name, f in by_name(formats)))


def register(app: typer.Typer) -> None:
    app.add_typer(group, name="list")
