"""``harness slurm script``: an sbatch script that runs one ``harness run`` as a Slurm job.

The script asks Slurm for the nodes and starts one ``harness run --launcher slurm`` task per
node with ``srun``; each task takes the job id, its node rank, the node count and the job's
first node (MASTER_ADDR) from Slurm's variables, and the framework's launcher starts the
node's processes (``--nproc``). Every word of the script is quoted with :func:`shlex.quote`.
"""

from __future__ import annotations

import os
import shlex
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.errors import UserInputError
from harness.runner.job_link import JOB_SECRET_ENV

# Options of `harness run` that the script decides itself (from Slurm's variables).
_SLURM_OWNED = {"--launcher": "the script runs --launcher slurm",
                "--node-rank": "each node's rank is SLURM_NODEID",
                "--nnodes": "give the node count with `harness slurm script --nodes N`"}

HELP = """Write an sbatch script for a harness run on Slurm.

Everything after `--` is passed to `harness run` unchanged (checked now):

  harness slurm script --nodes 2 --cpus-per-task 8 -o job.sbatch -- --case gpt3_125M --nproc 8

then `sbatch job.sbatch` (or `sbatch --wait job.sbatch`). Node 0 records the job's result in
--output under `<SLURM_JOB_ID>-<case>-<framework>-<vendor>`.
"""


slurm_app = typer.Typer(help="Run harness jobs under Slurm.", no_args_is_help=True,
                        rich_markup_mode=None)


@slurm_app.command("script", help=HELP, context_settings={"allow_extra_args": True,
                                                          "ignore_unknown_options": True})
def script_command(
    ctx: typer.Context,
    nodes: Annotated[int, typer.Option(min=1, help="Nodes (#SBATCH --nodes); one srun task each.")] = 1,
    cpus_per_task: Annotated[Optional[int], typer.Option(
        min=1, help="CPUs of each node's task (#SBATCH --cpus-per-task): the node's training "
                    "processes share them.")] = None,
    gpus_per_node: Annotated[Optional[int], typer.Option(
        min=1, help="GPUs per node (#SBATCH --gpus-per-node).")] = None,
    partition: Annotated[Optional[str], typer.Option(help="#SBATCH --partition.")] = None,
    time_limit: Annotated[Optional[str], typer.Option(
        "--time", help="#SBATCH --time, e.g. 01:00:00.")] = None,
    job_name: Annotated[str, typer.Option(help="#SBATCH --job-name.")] = "harness",
    sbatch_option: Annotated[Optional[list[str]], typer.Option(
        help="Another #SBATCH line, e.g. --sbatch-option=--account=proj (repeatable).")] = None,
    out: Annotated[Optional[Path], typer.Option(
        "-o", "--out", help="Write the script here (default: print it).")] = None,
) -> None:
    run_args = list(ctx.args)
    _check_run_arguments(ctx.find_root().command, run_args)
    text = sbatch_script(run_args, nodes=nodes, cpus_per_task=cpus_per_task,
                         gpus_per_node=gpus_per_node, partition=partition,
                         time_limit=time_limit, job_name=job_name,
                         extra=list(sbatch_option or []), workdir=Path.cwd())
    if out is None:
        typer.echo(text, nl=False)
        return
    try:
        out.write_text(text)
        out.chmod(out.stat().st_mode | 0o100)
    except OSError as exc:
        raise UserInputError(f"-o {out}: {exc.strerror or exc}") from None
    typer.echo(f"wrote {out}; submit it with: sbatch {shlex.quote(str(out))}", err=True)


def register(app: typer.Typer) -> None:
    app.add_typer(slurm_app, name="slurm")


def _check_run_arguments(root, run_args: list[str]) -> None:
    """The arguments must be a valid `harness run` of the ``root`` command group (so a typo
    fails now, not in the queue)."""
    if not run_args:
        raise UserInputError("give the `harness run` options after `--`, e.g. "
                             "harness slurm script --nodes 2 -- --case gpt3_125M")
    for arg in run_args:
        name = arg.split("=", 1)[0]
        if name in _SLURM_OWNED:
            raise UserInputError(f"{name} is not for `harness slurm script` runs: {_SLURM_OWNED[name]}")
    command = root.commands["run"]
    try:
        command.make_context("harness run", list(run_args), resilient_parsing=False)
    except Exception as exc:  # click's usage errors; they carry the message
        message = getattr(exc, "format_message", lambda: str(exc))()
        if type(exc).__name__ == "Exit":  # --help
            raise UserInputError("`harness run --help` lists the options to pass after `--`") from None
        raise UserInputError(f"the `harness run` options after `--`: {message}") from None


def sbatch_script(run_args: list[str], *, nodes: int, cpus_per_task: int | None,
                  gpus_per_node: int | None, partition: str | None, time_limit: str | None,
                  job_name: str, extra: list[str], workdir: Path) -> str:
    """The batch script: #SBATCH lines, then one srun task per node running harness."""
    directives = [f"--job-name={job_name}", f"--nodes={nodes}", "--ntasks-per-node=1"]
    if cpus_per_task:
        directives.append(f"--cpus-per-task={cpus_per_task}")
    if gpus_per_node:
        directives.append(f"--gpus-per-node={gpus_per_node}")
    if partition:
        directives.append(f"--partition={partition}")
    if time_limit:
        directives.append(f"--time={time_limit}")
    directives += extra
    for directive in directives:
        if "\n" in directive or not directive.startswith("-"):
            raise UserInputError(f"--sbatch-option {directive!r}: give one sbatch option, e.g. "
                                 "--sbatch-option=--account=proj")
    # srun gets the node and CPU counts itself: Slurm 22.05's srun no longer inherits
    # --cpus-per-task from the batch script.
    srun = ["srun", f"--nodes={nodes}", f"--ntasks={nodes}", "--ntasks-per-node=1"]
    if cpus_per_task:
        srun.append(f"--cpus-per-task={cpus_per_task}")
    harness = [sys.executable, "-m", "harness", "run", *run_args, "--launcher", "slurm"]
    lines = ["#!/bin/bash",
             f"# Written by `harness slurm script` on {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.",
             "# Each node's task takes its job id, node rank and MASTER_ADDR from Slurm.",
             *(f"#SBATCH {shlex.quote(directive)}" for directive in directives),
             "set -euo pipefail",
             f"cd {shlex.quote(str(workdir))}"]
    path = os.environ.get("PYTHONPATH")
    if path:  # the harness (and plugins) this script was written with
        lines.append(f"export PYTHONPATH={shlex.quote(path)}")
    # The job's secret, made when the job starts (never written into this file); srun hands
    # the environment to every node's task.
    lines += ["# The nodes authenticate what they tell each other with a secret of this job.",
              f"export {JOB_SECRET_ENV}=\"${{{JOB_SECRET_ENV}:-$(od -An -N32 -tx1 /dev/urandom "
              "| tr -d ' \\n')}\"",
              shlex.join(srun + harness)]
    return "\n".join(lines) + "\n"
