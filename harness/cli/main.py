"""``harness``: entry point, error handling, and command registration."""

from __future__ import annotations

import sys

import typer

from harness import __version__

HELP = """harness: measure, compare and certify training performance across frameworks and vendors.

Headline: [bold]harness run --vendor nvidia --case gpt3_6.7B[/bold]

Smoke test on any laptop: [bold]harness run --vendor cpu --case gpt3_6.7B --scale smoke[/bold]
"""

#: ``-h`` as well as ``--help`` on every command (click hands this to sub-contexts).
CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"harness {__version__}")
        raise typer.Exit()


def root_callback(
    version: bool = typer.Option(False, "--version", help="Show the version and exit.",
                                 callback=_version_callback, is_eager=True),
) -> None:
    """harness CLI."""


def build_app(harness=None) -> typer.Typer:
    """The CLI with core commands and every plugin's ``register_commands``; ``harness`` (a
    :class:`~harness.app.Harness`, loaded on first use when None) is what the commands use.

    The commands are top-level functions of the ``harness.cli`` modules; each reaches the
    invocation's :class:`~harness.cli.state.AppState` through its click context
    (``app_state(ctx)``), which the root context carries as its ``obj``."""
    from harness.cli import (benchmarks, certify, compare, env, equivalence, listing, parse,
                             plugins, report, results, run, slurm, sweep)
    from harness.cli.helptext import flow_help
    from harness.cli.metavars import ReadableGroup
    from harness.cli.state import AppState

    state = AppState(harness)
    app = typer.Typer(help=HELP, no_args_is_help=True, add_completion=True, cls=ReadableGroup,
                      context_settings={**CONTEXT_SETTINGS, "obj": state},
                      pretty_exceptions_enable=False, rich_markup_mode="rich")
    app.callback()(root_callback)
    for module in (run, plugins, results, listing, parse, env, sweep, report, compare, slurm,
                   certify, equivalence, benchmarks):
        module.register(app)
    state.harness().hook.register_commands(cli=app)
    flow_help(app)
    return app


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; user errors become one line on stderr with exit code 2, not a traceback."""
    from harness.errors import HarnessError
    from harness.runner.signals import Terminated

    try:
        app = build_app()
        result = app(args=argv, standalone_mode=False, prog_name="harness")
        return result if isinstance(result, int) else 0
    except HarnessError as exc:
        typer.echo(f"error: {exc}", err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        typer.echo("interrupted", err=True)
        return 130
    except Terminated as exc:
        typer.echo(str(exc), err=True)
        return exc.exit_code
    except Exception as exc:
        return _click_exit(exc)


def _click_exit(exc: Exception) -> int:
    """Exit code for click's control-flow exceptions (typer vendors click in newer releases,
    so they are recognised by shape rather than by class)."""
    name = type(exc).__name__
    if name == "Exit":
        return int(getattr(exc, "exit_code", 0))
    if name == "Abort":
        typer.echo("interrupted", err=True)
        return 130
    if hasattr(exc, "show") and hasattr(exc, "exit_code"):
        exc.show()
        return int(exc.exit_code)
    raise exc


if __name__ == "__main__":
    sys.exit(main())
