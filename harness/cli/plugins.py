"""``harness plugins``: what is loaded, from where, implementing which hooks."""

from __future__ import annotations

from typing import Annotated

import typer

from harness.cli.state import app_state


def plugins_command(
    ctx: typer.Context,
    json_output: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
) -> None:
    """List loaded plugins with their version, source and implemented hooks.

    Registrations skipped because an earlier plugin registered the same case, framework,
    vendor or log format name are listed below the table. Block plugins with
    HARNESS_BLOCK_PLUGINS=name1,name2.
    """
    infos = list(app_state(ctx).harness().plugins.values())
    skipped = app_state(ctx).registry().skipped
    if json_output:
        import dataclasses
        import json

        rows = [{**dataclasses.asdict(info),
                 "skipped_registrations": [dataclasses.asdict(s) for s in skipped
                                           if s.skipped_plugin == info.name]}
                for info in infos]
        typer.echo(json.dumps(rows, indent=2))
        return
    from harness.cli.console import make_console
    from rich.table import Table

    table = Table("plugin", "distribution", "version", "source", "hooks")
    for info in infos:
        table.add_row(info.name, info.distribution, info.version, info.source,
                      ", ".join(info.hooks))
    console = make_console()
    console.print(table)
    if skipped:
        skipped_table = Table("kind", "name", "skipped plugin", "kept plugin",
                              title="Skipped registrations (name already registered)")
        for s in skipped:
            skipped_table.add_row(s.kind, s.name,
                                  f"{s.skipped_plugin} ({s.skipped_distribution})",
                                  f"{s.kept_plugin} ({s.kept_distribution})")
        console.print(skipped_table)


def register(app: typer.Typer) -> None:
    app.command('plugins')(plugins_command)
