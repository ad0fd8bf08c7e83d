"""``harness plugins``: what is loaded, from where, implementing which hooks."""

from __future__ import annotations

from typing import Annotated

import typer


def register(app: typer.Typer, state) -> None:
    @app.command("plugins")
    def plugins_command(
        json_output: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    ) -> None:
        """List loaded plugins with their version, source and implemented hooks.

        Block plugins with HARNESS_BLOCK_PLUGINS=name1,name2.
        """
        infos = list(state.plugin_manager().harness_info.values())
        if json_output:
            import json

            typer.echo(json.dumps([info.__dict__ for info in infos], indent=2))
            return
        from harness.cli.console import make_console
        from rich.table import Table

        table = Table("plugin", "version", "source", "hooks")
        for info in infos:
            table.add_row(info.name, info.version, info.source, ", ".join(info.hooks))
        make_console().print(table)
