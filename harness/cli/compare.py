"""``harness compare``: two runs, two frameworks or two result sets side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.cli.state import app_state
from harness.cli.options import (DEFAULT_OUTPUT, CasesFilter, OutputOption, SweepsFilter,
                                 VendorsFilter, split_list)
from harness.errors import UserInputError

HELP = """Compare recorded results: value, ratio B/A, and whether the difference exceeds the runs' noise.

Examples:

harness compare RUN_A RUN_B  [dim]# two runs (ids or unique prefixes)[/dim]
harness compare results-old/ results-new/  [dim]# two result sets (results folders)[/dim]
harness compare --frameworks pytorch,paddle  [dim]# two frameworks in one results folder[/dim]
harness compare results-main/ results-pr/ --fail-if-slower 5 --beyond-noise  [dim]# CI gate[/dim]

Runs of two sets are paired when case, vendor, scale, layout, precision, batch size,
accumulation and sweep label agree; a geometric-mean row sums up the ratios. A difference is
beyond noise when the 95% bootstrap confidence interval of median(B) / median(A) over the
runs' per-step throughputs (re-read from their logs) excludes 1; "unknown" when a side has no
per-step samples. Noise A/B: CV of FINAL_RESULT over the repeats, else the step-time CV
(flagged "noisy" above 3%). A pair of different cases or of
different measurement windows (steps, warm-up, learning rate, dataset, seed) is warned about.
Across frameworks each case cites the newest `harness equivalence` check of both frameworks
stored in the results folder ("equivalent workload: checked on DATE, max loss difference X").
"""

EXIT_SLOWER = 1


def compare_command(
    ctx: typer.Context,
    a: Annotated[Optional[str], typer.Argument(help="Baseline: a run id or a results folder.")] = None,
    b: Annotated[Optional[str], typer.Argument(help="Candidate: a run id or a results folder.")] = None,
    frameworks: Annotated[Optional[str], typer.Option(
        help="Compare two frameworks of one results folder: BASELINE,CANDIDATE.")] = None,
    output: OutputOption = DEFAULT_OUTPUT,
    case: CasesFilter = None,
    vendor: VendorsFilter = None,
    sweep: SweepsFilter = None,
    fail_if_slower: Annotated[Optional[float], typer.Option(
        min=0, help="Exit 1 if any candidate is more than PCT percent slower than its baseline.")] = None,
    beyond_noise: Annotated[bool, typer.Option(
        "--beyond-noise", help="With --fail-if-slower: fail only on slowdowns that also exceed "
                               "the runs' noise.")] = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print the comparison as JSON.")] = False,
    allow_different_windows: Annotated[bool, typer.Option(
        "--allow-different-windows",
        help="Also pair runs measured over different windows (steps, warm-up, learning "
             "rate, dataset, seed); by default they are listed apart, not compared.")] = False,
) -> None:
    from harness.cli.report import filters_from_options
    from harness.report.steps import log_step_samples
    from harness.compare import (
        Side,
        compare_frameworks,
        compare_runs,
        compare_sides,
        load_side,
    )

    filters = filters_from_options(case, None, vendor, sweep, None, None)
    read_samples = log_step_samples(app_state(ctx).registry())
    if frameworks:
        if a or b:
            raise UserInputError("give either two runs / result folders or --frameworks, not both")
        names = split_list(frameworks, "--frameworks")
        if len(names) != 2:
            raise UserInputError(f"--frameworks takes exactly two names, BASELINE,CANDIDATE; got {frameworks!r}")
        comparison = compare_frameworks(output, names[0], names[1], filters,
                                        allow_different_windows, read_samples)
    else:
        if not (a and b):
            raise UserInputError("give two run ids, two results folders, or --frameworks A,B "
                                 "(see `harness compare --help`)")
        side_a, side_b = load_side(a, output, filters), load_side(b, output, filters)
        if isinstance(side_a, Side) != isinstance(side_b, Side):
            raise UserInputError("compare a run with a run, or a results folder with a results folder")
        comparison = (compare_sides(side_a, side_b, allow_different_windows, read_samples)
                      if isinstance(side_a, Side)
                      else compare_runs(side_a, side_b, allow_different_windows, read_samples))
    if json_output:
        typer.echo(json.dumps(comparison.to_dict(), indent=2))
    else:
        _print(comparison)
    for run_a, run_b, differences in comparison.different_windows:
        typer.echo(f"not compared: {run_a.result.run_id} and {run_b.result.run_id} were "
                   "measured over different windows (" + ", ".join(
                       f"{k} {va} vs {vb}" for k, (va, vb) in differences.items())
                   + "); --allow-different-windows pairs them", err=True)
    for pair in comparison.pairs:
        for warning in pair.warnings:
            typer.echo(f"warning: {pair.describe()}: {warning}; its ratio is not like for like",
                       err=True)
    if not comparison.pairs:
        typer.echo("warning: no comparable pairs (nothing matched on case, layout, precision "
                   "and batch size)", err=True)
    if beyond_noise and fail_if_slower is None:
        raise UserInputError("--beyond-noise qualifies --fail-if-slower PCT; give both")
    if fail_if_slower is not None:
        slower = comparison.slower_than(fail_if_slower, beyond_noise=beyond_noise)
        if slower:
            for pair in slower:
                typer.echo(f"slower: {pair.describe()}: {pair.value_b:,.2f} vs {pair.value_a:,.2f} "
                           f"{pair.unit} ({pair.slower_pct:.1f}% slower > {fail_if_slower:g}%)", err=True)
            raise typer.Exit(EXIT_SLOWER)


def register(app: typer.Typer) -> None:
    app.command('compare', help=HELP)(compare_command)


def _print(comparison) -> None:
    from harness.stats import NOISE_CONFIDENCE
    from rich.markup import escape
    from rich.table import Table

    from harness.cli.console import make_console

    table = Table(title=f"A = {escape(comparison.label_a)}   B = {escape(comparison.label_b)}", title_justify="left")
    for column in ("what", "A", "B", "unit", "B/A", "change", "noise A", "noise B", "beyond noise"):
        table.add_column(column, justify="left" if column in ("what", "unit") else "right")
    for pair in comparison.pairs:
        verdict = _verdict(pair)
        style = "green" if pair.change > 0 else "red"
        what = pair.describe() + (f" ({pair.a.framework} vs {pair.b.framework})"
                                  if pair.a.framework != pair.b.framework else "")
        table.add_row(
            escape(what) + (" [yellow](!)[/yellow]" if pair.warnings else ""),
            f"{pair.value_a:,.2f}", f"{pair.value_b:,.2f}", pair.unit, f"{pair.ratio:.3f}",
            f"[{style}]{pair.change:+.1%}[/{style}]",
            _noise_text(pair.noise_a), _noise_text(pair.noise_b), verdict,
        )
    geomean = comparison.geometric_mean_ratio
    if len(comparison.pairs) > 1 and geomean is not None:
        table.add_section()
        table.add_row(f"geometric mean of {len(comparison.pairs)} pairs", "", "", "",
                      f"{geomean:.3f}", f"{geomean - 1:+.1%}", "", "", "")
    console = make_console()
    console.print(table)
    for case, statement in comparison.equivalence.items():
        console.print(f"{escape(case)}: {escape(statement)}", highlight=False)
    if comparison.pairs:
        console.print(f"beyond noise: the {NOISE_CONFIDENCE:.0%} confidence interval of median(B) / "
                      "median(A) over the runs' per-step throughputs (bootstrap) excludes 1; "
                      "unknown: a side has no per-step samples", highlight=False, style="dim")
    for label, runs in (("A", comparison.only_a), ("B", comparison.only_b)):
        if runs:
            console.print(f"only in {label} (no match): " + ", ".join(r.result.run_id for r in runs),
                          highlight=False)


def _verdict(pair) -> str:
    interval = pair.interval
    if interval is None:
        return "unknown"
    answer = "[bold]yes[/bold]" if interval.beyond_noise else "no"
    return f"{answer} (CI {interval.low:.3f}-{interval.high:.3f})"


def _noise_text(noise) -> str:
    from harness.report.noise import noisy

    if noise.cv is None:
        return "-"
    flag = " [yellow]noisy[/yellow]" if noisy(noise.cv) else ""
    return f"{noise.cv:.1%} ({'repeats' if noise.source == 'repeats' else 'steps'}){flag}"
