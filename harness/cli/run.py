"""``harness run``: one benchmark case on one vendor."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from harness.cli.state import app_state
from harness.cli.options import (DEFAULT_OUTPUT, DataDirOption, EnvChoice, EnvOption,
                                 LauncherChoice, OutputOption, PrecisionChoice, RunModeChoice, ScaleChoice, SetOption,
                                 ShowLogOption, WheelhouseOption)

EXIT_FAILED, EXIT_INTERRUPTED = 1, 130


def run_command(
    ctx: typer.Context,
    case: Annotated[str, typer.Option(
        help="Case name (see `harness list cases`) or a FlagPerf case string "
             "model:framework_version:hardware:nnodes:nproc:repeat.")],
    vendor: Annotated[str, typer.Option(help="Vendor plugin: cpu, nvidia, ...")] = "cpu",
    framework: Annotated[Optional[str], typer.Option(
        help="Framework plugin; default: pytorch where it implements the case.")] = None,
    scale: Annotated[ScaleChoice, typer.Option(
        help="smoke shrinks the case (few layers, short sequence, few steps) for a CPU.")] = ScaleChoice.full,
    run_mode: Annotated[Optional[RunModeChoice], typer.Option(
        help="sp: one process; mp: all devices (2 processes on cpu).")] = None,
    nproc: Annotated[Optional[int], typer.Option(min=1, help="Processes (devices) per node.")] = None,
    nnodes: Annotated[Optional[int], typer.Option(min=1, help=(
        "Nodes. Run the same command on every node with MASTER_ADDR/MASTER_PORT and the "
        "job's secret HARNESS_JOB_SECRET exported, --job-id and --node-rank; node 0 records "
        "the job's result."))] = None,
    job_id: Annotated[Optional[str], typer.Option(
        help="Multi-node: the job's id, the same on every node (default: HARNESS_JOB_ID, "
             "then SLURM_JOB_ID). Names the result and the rendezvous.")] = None,
    node_rank: Annotated[Optional[int], typer.Option(
        min=0, help="Multi-node: this node's rank, 0 to nnodes-1 (default: NODE_RANK, then "
                    "SLURM_NODEID).")] = None,
    launcher: Annotated[LauncherChoice, typer.Option(help=(
        "local: you start the same command on every node. slurm: inside a Slurm job, one "
        "srun task per node; job id, node rank, node count and MASTER_ADDR come from Slurm "
        "(`harness slurm script` writes the sbatch script)."))] = LauncherChoice.local,
    micro_batch_size: Annotated[Optional[int], typer.Option(
        "--micro-batch-size", "--batch-size", min=1,
        help="Micro batch size per process (--batch-size is the same option).")] = None,
    precision: Annotated[Optional[PrecisionChoice], typer.Option(help="Training precision.")] = None,
    max_steps: Annotated[Optional[int], typer.Option(min=1, help="Optimizer steps.")] = None,
    set_: SetOption = None,
    repeat: Annotated[int, typer.Option(min=1, help="Run N times; report the median.")] = 1,
    output: OutputOption = DEFAULT_OUTPUT,
    data_dir: DataDirOption = None,
    env: EnvOption = EnvChoice.auto,
    wheelhouse: WheelhouseOption = None,
    hardware_config: Annotated[Optional[str], typer.Option(
        help="Vendor per-case config by name, e.g. config_TP1PP1SH2SP8A10080Gx1x8.")] = None,
    show_log: ShowLogOption = False,
    json_output: Annotated[bool, typer.Option("--json", help="Print the result JSON on stdout.")] = False,
) -> int:
    """Run a benchmark case: resolve config, prepare env and data, train, record the result."""
    import harness
    from harness.cli.progress import ConsoleObserver
    from harness.cli.summary import print_summary
    from harness.config_resolution import parse_set_pairs

    state = app_state(ctx)
    observer = ConsoleObserver(state.registry(), show_log=show_log)
    try:
        harness.run(
            case, vendor=vendor, framework=framework, scale=scale.value,
            run_mode=run_mode.value if run_mode else None, nproc=nproc, nnodes=nnodes,
            micro_batch_size=micro_batch_size, precision=precision.value if precision else None,
            max_steps=max_steps, settings=parse_set_pairs(list(set_ or [])), repeat=repeat,
            output=output, data_dir=data_dir, env=env.value, wheelhouse=wheelhouse,
            hardware_config=hardware_config,
            job_id=job_id, node_rank=node_rank, launcher=launcher.value, observer=observer,
            app=state.harness())
    finally:
        observer.end_repeat()  # the bar runs from the first phase: stop it on any failure
    report = observer.report
    if report.node_rank:
        typer.echo(f"node {report.node_rank} of job {report.job_id}: {report.result.status}"
                   f"; node record {report.legacy_path}; the job's result is node 0's")
    elif json_output:
        typer.echo(report.result.model_dump_json(indent=2))
    else:
        print_summary(report, registry=state.registry())
    if report.note:
        typer.echo(f"warning: {report.note}", err=True)
    if report.result.status == "interrupted":
        raise typer.Exit(EXIT_INTERRUPTED)
    from harness.runner.signals import terminated_exit_code, terminations_received

    if report.result.status == "terminated" and terminations_received():
        raise typer.Exit(terminated_exit_code())  # not when a training process was killed
    if report.result.status != "success":
        raise typer.Exit(EXIT_FAILED)
    return 0


def register(app: typer.Typer) -> None:
    app.command('run')(run_command)
