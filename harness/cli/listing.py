"""``harness list``: cases, frameworks, vendors and log formats that plugins registered."""

from __future__ import annotations

from collections.abc import Iterable

import typer


def print_table(columns: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> None:
    """One rich table on stdout, wide enough off a terminal that nothing is cut."""
    from rich.table import Table

    from harness.cli.console import make_console

    table = Table(*columns)
    for row in rows:
        table.add_row(*row)
    make_console().print(table)


def by_name(catalog) -> list[tuple[str, object]]:
    """(name, registered object) pairs of a registry catalog, in name order."""
    return [(name, catalog.items[name]) for name in catalog.names()]


def register(app: typer.Typer, state) -> None:
    group = typer.Typer(help="List what the loaded plugins provide.", no_args_is_help=True)
    app.add_typer(group, name="list")

    @group.command("cases")
    def cases_command() -> None:
        """Cases with their model, unit and the frameworks that implement them."""
        registry = state.registry()
        print_table(("case", "model", "unit", "frameworks", "description"),
                    ((name, case.model, case.unit, ", ".join(registry.frameworks_for(case)) or "-",
                      case.description) for name, case in by_name(registry.cases)))

    @group.command("frameworks")
    def frameworks_command() -> None:
        """Frameworks and the model families they implement."""
        frameworks = state.registry().frameworks
        print_table(("framework", "models", "log format", "plugin"),
                    ((name, ", ".join(sorted(fw.models)), fw.log_format, frameworks.owners[name])
                     for name, fw in by_name(frameworks)))

    @group.command("vendors")
    def vendors_command() -> None:
        """Vendors and their device kind."""
        vendors = state.registry().vendors
        print_table(("vendor", "devices", "description", "plugin"),
                    ((name, v.device_kind, v.description, vendors.owners[name])
                     for name, v in by_name(vendors)))

    @group.command("formats")
    def formats_command() -> None:
        """Log formats that `harness parse` and progress display understand."""
        formats = state.registry().log_formats
        print_table(("format", "unit", "default method", "description"),
                    ((name, f.unit or "-", f.default_method, f.description)
                     for name, f in by_name(formats)))
