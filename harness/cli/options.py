"""Options and choices that several commands share, defined once.

The choices come from the pydantic models' Literals (``harness.models``), so a value the
models accept is exactly a value the CLI offers. Options of one command only stay with it.
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional, get_args

import typer

from harness.errors import UserInputError
from harness.models.config import Precision, RunMode, Scale
from harness.models.context import EnvMode, Launcher
from harness.models.launch import RunStatus


def literal_choices(name: str, literal) -> type[Enum]:
    """A ``str`` Enum (what typer shows as choices) with one member per value of ``literal``."""
    return Enum(name, [(value, value) for value in get_args(literal)], type=str, module=__name__)


PrecisionChoice = literal_choices("PrecisionChoice", Precision)
ScaleChoice = literal_choices("ScaleChoice", Scale)
RunModeChoice = literal_choices("RunModeChoice", RunMode)
EnvChoice = literal_choices("EnvChoice", EnvMode)
LauncherChoice = literal_choices("LauncherChoice", Launcher)
StatusChoice = literal_choices("StatusChoice", RunStatus)

PRECISIONS: tuple[str, ...] = get_args(Precision)

# Options of the commands that run training (run, sweep).
DataDirOption = Annotated[Optional[Path], typer.Option(
    help="Dataset root (default: the cache). A real dataset placed there, e.g. PaddleNLP "
         "gpt_en_dataset_300m_ids.npy/_idx.npz, is used instead of synthetic data.")]
EnvOption = Annotated[EnvChoice, typer.Option(
    help="auto: each framework plugin's environment (isolated where it needs one); "
         "current: this interpreter.")]
SetOption = Annotated[Optional[list[str]], typer.Option(
    "--set", help="Override any setting or hyper-parameter (of every run of a sweep): --set key=value "
         "(repeatable).")]
ShowLogOption = Annotated[bool, typer.Option(help="Echo the training log while it runs.")]
# Options of every command that may build an isolated environment (run, sweep, env build).
WheelhouseOption = Annotated[Optional[Path], typer.Option(
    help="Build isolated environments offline from this folder of wheels only (pip download "
         "-d DIR ...); default: $HARNESS_WHEELHOUSE, else the package indexes. See "
         "docs/airgapped.md.")]

# The results folder, under one name (--output, alias --results) in every command.
OutputOption = Annotated[Path, typer.Option(
    "--output", "--results", help="Results folder (run folders and harness.db).")]
DEFAULT_OUTPUT = Path("results")

# Filters of the commands that read recorded runs (report, compare).
CasesFilter = Annotated[Optional[str], typer.Option(
    "--case", help="Only these cases (comma-separated).")]
FrameworksFilter = Annotated[Optional[str], typer.Option(
    "--framework", help="Only these frameworks (comma-separated).")]
VendorsFilter = Annotated[Optional[str], typer.Option(
    "--vendor", help="Only these vendors (comma-separated).")]
SweepsFilter = Annotated[Optional[str], typer.Option(
    "--sweep", help="Only runs of these sweeps (by name, comma-separated).")]


def split_list(text: str | None, option: str, kind: type = str) -> list:
    """``"1,2"`` -> ``[1, 2]``; a clear error for an item that is not a ``kind``."""
    if text is None:
        return []
    items = [item.strip() for item in text.split(",") if item.strip()]
    if not items:
        raise UserInputError(f"{option} needs at least one value, e.g. {option} a,b")
    if kind is int:
        bad = [item for item in items if not item.isdigit() or int(item) < 1]
        if bad:
            raise UserInputError(f"{option} takes positive integers separated by commas; got {bad[0]!r}")
        return [int(item) for item in items]
    return items
