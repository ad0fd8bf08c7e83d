"""Bad input: one line on stderr naming what was wrong and what is valid, exit 2, no traceback."""

from __future__ import annotations

import pytest

from tests.conftest import run_cli


@pytest.mark.parametrize("args, message", [
    (["run", "--case", "gpt3_7B", "--scale", "smoke"], "unknown case 'gpt3_7B'"),
    (["run", "--case", "gpt3_125M", "--vendor", "amd"], "unknown vendor 'amd'"),
    (["run", "--case", "gpt3_125M", "--framework", "jax"], "unknown framework 'jax'"),
    (["run", "--case", "gpt3_125M", "--framework", "demo"], "does not implement case 'gpt3_125M'"),
    (["run", "--case", "gpt3_125M", "--set", "hiden_size=3"], "unknown key 'hiden_size'"),
    (["run", "--case", "gpt3_125M", "--set", "max_steps=lots"], "invalid value for 'max_steps'"),
    (["run", "--case", "gpt3_125M", "--set", "num_layers=2"], "cannot be overridden"),
    (["run", "--case", "gpt3_125M:pytorch_2.1:A100:1:x:1"], "nnodes:nproc:repeat"),
    (["run", "--case", "gpt3_125M", "--run-mode", "sp", "--nproc", "2"], "--run-mode sp runs one process"),
    (["results", "show", "nope"], "no single run matches 'nope'"),
])
def test_bad_input_exits_2_with_one_line(args, message, cli_env, tmp_path):
    proc = run_cli(args, cli_env, tmp_path)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], proc.stderr
    assert "Traceback" not in proc.stderr


def test_unknown_case_lists_valid_choices(cli_env, tmp_path):
    proc = run_cli(["run", "--case", "gpt3_7B"], cli_env, tmp_path)
    assert "Valid choices:" in proc.stderr and "gpt3_6.7B" in proc.stderr


def test_bad_option_value_is_a_usage_error(cli_env, tmp_path):
    proc = run_cli(["run", "--case", "gpt3_125M", "--precision", "fp8"], cli_env, tmp_path)
    assert proc.returncode == 2 and "fp8" in proc.stderr and "Traceback" not in proc.stderr


def test_nvidia_without_gpus_explains_and_suggests(cli_env, tmp_path):
    proc = run_cli(["run", "--vendor", "nvidia", "--case", "gpt3_6.7B"], cli_env, tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1, proc.stderr
    assert "NVIDIA" in proc.stderr and "--vendor cpu" in proc.stderr


def test_help_explains_the_run_options(cli_env, tmp_path):
    proc = run_cli(["run", "--help"], cli_env, tmp_path)
    assert proc.returncode == 0
    for option in ("--case", "--vendor", "--scale", "--run-mode", "--set", "--repeat", "--json"):
        assert option in proc.stdout


@pytest.mark.parametrize("setting, message", [
    ("micro_batch_size=99999999999999999999", "invalid value for 'micro_batch_size': Input should be less than or equal to 1048576"),
    ("learning_rate=nan", "invalid value for 'learning_rate': nan; valid: a finite number from 0 to inf"),
    ("learning_rate=-1", "invalid value for 'learning_rate': -1.0; valid: a finite number from 0 to inf"),
    ("learning_rate=inf", "invalid value for 'learning_rate': inf"),
    ("dropout=1.5", "invalid value for 'dropout': 1.5; valid: a finite number from 0 to 1"),
    ("lr_warmup_steps=99999999999999999999", "invalid value for 'lr_warmup_steps'"),
    ("timeout_s=nan", "invalid value for 'timeout_s'"),
    ("seed=-1", "invalid value for 'seed'"),
])
def test_a_numeric_setting_out_of_its_range_is_refused_before_launch(setting, message, cli_env, tmp_path):
    proc = run_cli(["run", "--case", "gpt3_125M", "--scale", "smoke", "--set", setting], cli_env, tmp_path)
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and message in errors[0], proc.stderr
    results = tmp_path / "results"
    assert not results.exists() or not any(results.iterdir())  # no run folder, no database row
