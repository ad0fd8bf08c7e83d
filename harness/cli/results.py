"""``harness results``: read the results database."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.cli.options import DEFAULT_OUTPUT, OutputOption, StatusChoice
from harness.errors import UserInputError


def register(app: typer.Typer, state) -> None:
    group = typer.Typer(help="List and show recorded results.", no_args_is_help=True)
    app.add_typer(group, name="results")

    @group.command("list")
    def list_command(
        output: OutputOption = DEFAULT_OUTPUT,
        case: Annotated[Optional[str], typer.Option(help="Only this case.")] = None,
        framework: Annotated[Optional[str], typer.Option(help="Only this framework.")] = None,
        vendor: Annotated[Optional[str], typer.Option(help="Only this vendor.")] = None,
        status: Annotated[Optional[StatusChoice], typer.Option(help="Only this status.")] = None,
        limit: Annotated[int, typer.Option(min=1, help="At most this many, newest first.")] = 50,
    ) -> None:
        """List recorded runs, newest first."""
        from harness.cli.console import make_console
        from rich.table import Table

        from harness.store import ResultStore

        rows = ResultStore(output).list(case=case, framework=framework, vendor=vendor,
                                        status=status.value if status else None, limit=limit)
        table = Table("run id", "case", "framework", "vendor", "status", "FINAL_RESULT", "unit", "config")
        for r in rows:
            value = f"{r.throughput.value:,.2f}" if r.throughput else "-"
            unit = r.throughput.unit if r.throughput else ""
            table.add_row(r.run_id, r.case, r.framework, r.vendor, r.status, value, unit, r.config_hash)
        make_console().print(table)
        if not rows:
            typer.echo(f"no runs recorded in {output}", err=True)

    @group.command("show")
    def show_command(
        run_id: Annotated[str, typer.Argument(help="Run id or a unique prefix of one.")],
        output: OutputOption = DEFAULT_OUTPUT,
    ) -> None:
        """Print the full result JSON of one run."""
        from harness.store import ResultStore

        result = ResultStore(output).get(run_id)
        if result is None:
            raise UserInputError(f"no single run matches {run_id!r} in {output}; see `harness results list`")
        typer.echo(result.model_dump_json(indent=2))
