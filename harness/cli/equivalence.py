"""``harness equivalence``: is a case the same computation in every framework?"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.cli.options import (DEFAULT_OUTPUT, DataDirOption, OutputOption, ScaleChoice,
                                 SetOption, WheelhouseOption, split_list)
from harness.cli.state import app_state

HELP = """Check that frameworks train a case as the same computation.

The first framework's initial weights are exported in canonical names (.npz); every other
framework loads them, and all train N steps in fp32 (fp64 for cases whose training
amplifies fp32 rounding beyond use, e.g. the smoke CNNs), one process, on the same sample
order with the same schedule. Compared pair by pair with the first: parameter count and
shapes, per-layer activation checksums of the first batch (where they diverge first), the
loss of every step, step 1's gradient norm and the final weights, against tolerances derived
from the rounding of that arithmetic (docs/equivalence.md). The verdict is stored under
RESULTS/equivalence/CASE/ and `harness compare` across frameworks cites it.

Examples:

harness equivalence --case gpt3_125M --frameworks pytorch,paddle
harness equivalence --case resnet50 --frameworks pytorch,paddle,mxnet --steps 5
harness equivalence --case gpt3_1.3B --frameworks pytorch,megatron --vendor nvidia --scale full
harness equivalence --case gpt3_125M --frameworks pytorch  [dim]# records a reference[/dim]
harness equivalence --case gpt3_125M --frameworks paddle --reference results/equivalence/gpt3_125M/STAMP

Exit status: 0 equivalent, 1 not equivalent (or a framework failed), 2 bad input.
"""

EXIT_NOT_EQUIVALENT = 1


def equivalence_command(
    ctx: typer.Context,
    case: Annotated[str, typer.Option(help="Case name (see `harness list cases`).")],
    frameworks: Annotated[str, typer.Option(
        help="Comma-separated frameworks; the first is the reference, e.g. pytorch,paddle.")],
    steps: Annotated[Optional[int], typer.Option(
        min=1, help="Optimizer steps each framework trains (default 10; with --reference, "
                    "the reference's).")] = None,
    vendor: Annotated[str, typer.Option(help="Vendor plugin whose devices run it.")] = "cpu",
    scale: Annotated[ScaleChoice, typer.Option(
        help="smoke shrinks the case (few layers, short sequence) for a CPU.")] = ScaleChoice.smoke,
    reference: Annotated[Optional[Path], typer.Option(
        help="Folder of a stored check: every framework loads its initial state and is "
             "compared with its trace (of --reference-framework).")] = None,
    reference_framework: Annotated[Optional[str], typer.Option(
        help="With --reference: whose trace in it is the reference (default: the first).")] = None,
    set_: SetOption = None,
    output: OutputOption = DEFAULT_OUTPUT,
    data_dir: DataDirOption = None,
    wheelhouse: WheelhouseOption = None,
    json_output: Annotated[bool, typer.Option("--json", help="Print the verdict as JSON.")] = False,
) -> None:
    from harness.equivalence.runner import EquivalenceRequest, run_equivalence
    from harness.errors import UserInputError

    if reference_framework and reference is None:
        raise UserInputError("--reference-framework qualifies --reference FOLDER; give both")
    request = EquivalenceRequest(
        case=case, frameworks=split_list(frameworks, "--frameworks"), steps=steps,
        vendor=vendor, scale=scale.value, set_pairs=list(set_ or []), output=output,
        data_dir=data_dir, wheelhouse=wheelhouse, reference_dir=reference,
        reference_framework=reference_framework)
    result = run_equivalence(app_state(ctx).harness(), request,
                             progress=lambda message: typer.echo(message, err=True))
    if json_output:
        typer.echo(json.dumps(json.loads(result.model_dump_json()), indent=2))
    else:
        print_verdict(result)
    if not result.passed:
        raise typer.Exit(EXIT_NOT_EQUIVALENT)


def register(app: typer.Typer) -> None:
    app.command("equivalence", help=HELP)(equivalence_command)


def print_verdict(result) -> None:
    from rich.markup import escape
    from rich.table import Table

    from harness.cli.console import make_console

    console = make_console()
    for run in result.runs:
        if run.error:
            console.print(f"{run.framework}: {run.status}: {escape(run.error)}", highlight=False)
    table = Table(title=f"{escape(result.case)}: {result.steps} steps, {result.precision}, reference "
                        f"{escape(result.reference)}", title_justify="left")
    for column in ("pair", "parameters", "max loss diff", "max rel", "step 1 grad norm rel",
                   "final weights", "first divergence", "verdict"):
        table.add_column(column, justify="left" if column in ("pair", "first divergence") else "right")
    for pair in result.pairs:
        grad = pair.grad_norm
        table.add_row(
            f"{escape(pair.reference)} vs {escape(pair.candidate)}",
            f"{pair.parameter_count[0]:,}" + ("" if pair.parameter_count[0] == pair.parameter_count[1]
                                              else f" vs {pair.parameter_count[1]:,}"),
            _e(pair.max_loss_difference), _e(pair.max_loss_relative),
            "-" if grad is None else f"{grad.relative:.1e} (tol {grad.tolerance:.1e})",
            "-" if pair.final_change is None else f"{pair.final_change:.1e} (tol {pair.final_tolerance:.1e})",
            escape(pair.first_divergence or "-"),
            "[green]pass[/green]" if pair.passed else "[red]FAIL[/red]")
    console.print(table)
    for pair in result.pairs:
        steps = Table(title=f"{escape(pair.reference)} vs {escape(pair.candidate)}: loss per step",
                      title_justify="left")
        for column in ("step", pair.reference, pair.candidate, "difference", "relative", "tolerance"):
            steps.add_column(escape(column), justify="right")
        for step in pair.steps:
            steps.add_row(str(step.step), f"{step.reference:.7g}", f"{step.candidate:.7g}",
                          f"{step.difference:.2e}", f"{step.relative:.2e}", f"{step.tolerance:.2e}")
        console.print(steps)
        for problem in pair.problems:
            console.print(f"[red]x[/red] {escape(problem)}", highlight=False)
    for line in result.config_differences:
        console.print(f"[red]x[/red] resolved configs differ: {escape(line)}", highlight=False)
    for note in result.intentional:
        console.print(f"intentional: {escape(note)}", highlight=False)
    for framework, notes in result.trace_notes.items():
        for note in notes:
            console.print(f"{escape(framework)}: {escape(note)}", highlight=False)
    console.print(escape(result.statement()), highlight=False)
    console.print(f"stored in {escape(result.folder)}", highlight=False)


def _e(value: float | None) -> str:
    return "-" if value is None else f"{value:.2e}"
