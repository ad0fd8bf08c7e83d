"""The options several commands share are defined once, with choices from the models."""

from __future__ import annotations

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


@pytest.mark.parametrize("command", [["run"], ["sweep"], ["parse"], ["report"], ["compare"],
                                     ["results", "list"], ["results", "show"]])
def test_every_command_names_the_results_folder_alike(command):
    text = CliRunner().invoke(build_app(), [*command, "--help"], terminal_width=200).output
    assert "--output, --results" in text and "Results folder (run folders and harness.db)." in text


def test_precision_choices_reach_the_help_of_run_and_sweep():
    app = build_app()
    assert "<fp32|fp16|bf16|fp8>" in CliRunner().invoke(app, ["run", "--help"], terminal_width=200).output
    assert "fp32,fp16,bf16,fp8" in CliRunner().invoke(app, ["sweep", "--help"], terminal_width=200).output


def test_split_list():
    assert options.split_list("1, 2", "--nproc", int) == [1, 2]
    assert options.split_list(None, "--case") == []
