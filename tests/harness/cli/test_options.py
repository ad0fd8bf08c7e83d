"""The options several commands share are defined once, with choices from the models."""

from __future__ import annotations

import re
from typing import get_args

import pytest
from typer.testing import CliRunner

from harness.cli import options, parse, results, run, sweep
from harness.cli.main import build_app
from harness.models.config import Precision, RunMode, Scale
from harness.models.context import EnvMode
from harness.models.launch import RunStatus


@pytest.mark.parametrize("choice, literal", [
    (options.PrecisionChoice, Precision), (options.ScaleChoice, Scale),
    (options.RunModeChoice, RunMode), (options.EnvChoice, EnvMode), (options.StatusChoice, RunStatus),
])
def test_choices_are_the_model_literals(choice, literal):
    assert [member.value for member in choice] == list(get_args(literal))
    assert all(isinstance(member, str) for member in choice)


def test_commands_use_the_shared_definitions():
    assert run.PrecisionChoice is parse.PrecisionChoice is options.PrecisionChoice
    assert run.ScaleChoice is sweep.ScaleChoice and run.EnvChoice is sweep.EnvChoice
    assert results.StatusChoice is options.StatusChoice


def help_text(*command: str) -> str:
    """A command's --help as a wide terminal shows it (rich panels lay out to the width)."""
    return CliRunner().invoke(build_app(), [*command, "--help"], env={"COLUMNS": "200"}).output


@pytest.mark.parametrize("command", [["run"], ["sweep"], ["parse"], ["report"], ["compare"],
                                     ["results", "list"], ["results", "show"], ["results", "export"]])
def test_every_command_names_the_results_folder_alike(command):
    text = help_text(*command)
    assert re.search(r"--output,\s?--results", text), text
    assert "Results folder (run folders and harness.db)." in text


def test_precision_choices_reach_the_help_of_run_and_sweep():
    assert "<fp32|fp16|bf16|fp8>" in help_text("run")
    assert "fp32,fp16,bf16,fp8" in help_text("sweep")


def test_split_list():
    assert options.split_list("1, 2", "--nproc", int) == [1, 2]
    assert options.split_list(None, "--case") == []
