"""``harness list``: cases, frameworks, vendors and log formats that plugins registered."""

from __future__ import annotations

import typer


def register(app: typer.Typer, state) -> None:
    group = typer.Typer(help="List what the loaded plugins provide.", no_args_is_help=True)
    app.add_typer(group, name="list")

    def _table(*columns):
        from rich.table import Table

        return Table(*columns)

    def _print(table) -> None:
        from harness.cli.console import make_console

        make_console().print(table)

    @group.command("cases")
    def cases_command() -> None:
        """Cases with their model, unit and the frameworks that implement them."""
        registry = state.registry()
        table = _table("case", "model", "unit", "frameworks", "description")
        for name in registry.cases.names():
            case = registry.cases.items[name]
            table.add_row(name, case.model, case.unit,
                          ", ".join(registry.frameworks_for(case)) or "-", case.description)
        _print(table)

    @group.command("frameworks")
    def frameworks_command() -> None:
        """Frameworks and the model families they implement."""
        registry = state.registry()
        table = _table("framework", "models", "log format", "plugin")
        for name in registry.frameworks.names():
            fw = registry.frameworks.items[name]
            table.add_row(name, ", ".join(sorted(fw.models)), fw.log_format, registry.frameworks.owners[name])
        _print(table)

    @group.command("vendors")
    def vendors_command() -> None:
        """Vendors and their device kind."""
        registry = state.registry()
        table = _table("vendor", "devices", "description", "plugin")
        for name in registry.vendors.names():
            v = registry.vendors.items[name]
            table.add_row(name, v.device_kind, v.description, registry.vendors.owners[name])
        _print(table)

    @group.command("formats")
    def formats_command() -> None:
        """Log formats that `harness parse` and progress display understand."""
        registry = state.registry()
        table = _table("format", "unit", "default method", "description")
        for name in registry.log_formats.names():
            f = registry.log_formats.items[name]
            table.add_row(name, f.unit or "-", f.default_method, f.description)
        _print(table)
