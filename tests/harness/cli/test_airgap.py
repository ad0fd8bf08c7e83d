"""`harness run` on an air-gapped machine: environments from a wheelhouse, the framework
requirement chosen on the command line and recorded, and the errors of a missing wheel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import WHEELHOUSE_APP, run_cli, shut_network

RUN = ["run", "--case", "demo_steps", "--framework", "demo_venv"]


@pytest.fixture
def offline_env(cli_env, wheelhouse):
    env = shut_network(cli_env)
    env["HARNESS_WHEELHOUSE"] = str(wheelhouse)
    return env


def _envs(env) -> list[str]:
    root = Path(env["HARNESS_CACHE_DIR"]) / "envs"
    return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


def test_a_run_builds_its_environment_offline_and_records_where_from(offline_env, wheelhouse, tmp_path):
    proc = run_cli([*RUN, "--json"], offline_env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    environment = result["environment"]
    assert result["status"] == "success" and environment["isolated_env"] is True
    assert environment["requirements"] == ["six==1.16.0"]
    assert environment["wheelhouse"] == str(wheelhouse)
    assert result["framework_version"] == "1.16.0"
    assert result["config"]["settings"]["framework_requirement"] is None
    assert f"offline from {wheelhouse}" in proc.stderr


def test_the_framework_requirement_on_the_command_line_is_installed_and_recorded(
        offline_env, wheelhouse, tmp_path):
    first = run_cli([*RUN, "--json"], offline_env, tmp_path)
    assert first.returncode == 0, first.stderr[-3000:]
    proc = run_cli([*RUN, "--json", "--set", f"framework_requirement={WHEELHOUSE_APP}",
                    "--wheelhouse", str(wheelhouse)], offline_env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert result["config"]["settings"]["framework_requirement"] == WHEELHOUSE_APP
    assert result["config"]["sources"]["framework_requirement"] == "cli"
    assert result["environment"]["requirements"] == [WHEELHOUSE_APP]
    assert result["framework_version"] == "2.9.0.post0"
    assert result["config_hash"] != json.loads(first.stdout)["config_hash"]
    # Another requirement, another cache key: two environments side by side.
    assert len(_envs(offline_env)) == 2 and all(name.startswith("demo-venv-") for name in _envs(offline_env))


def test_a_wheel_missing_from_the_wheelhouse_is_one_line_and_leaves_nothing(offline_env, wheelhouse,
                                                                            tmp_path):
    proc = run_cli([*RUN, "--set", "framework_requirement=six==1.17.0"], offline_env, tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert errors == [f"error: the wheelhouse {wheelhouse} has no wheel for six==1.17.0; add it there "
                      "(pip download --only-binary=:all: -d DIR 'six==1.17.0' on a connected machine, "
                      "see docs/airgapped.md)"]
    assert _envs(offline_env) == []  # no half-built environment, no leftover of its build
    assert not (tmp_path / "results").exists() or list((tmp_path / "results").iterdir()) == []


@pytest.mark.parametrize("args, message", [
    (["--set", "framework_requirement=garbage here"],
     "error: invalid value for 'framework_requirement': Value error, not a pip requirement"),
    (["--wheelhouse", "/nonexistent/wheels"], "error: --wheelhouse /nonexistent/wheels: no such folder;"),
])
def test_bad_input_is_one_line_exit_2(cli_env, tmp_path, args, message):
    proc = run_cli([*RUN, *args], cli_env, tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(message), proc.stderr


def test_a_framework_in_the_current_interpreter_refuses_a_framework_requirement(cli_env, tmp_path):
    proc = run_cli(["run", "--case", "demo_steps", "--framework", "demo",
                    "--set", "framework_requirement=six==1.16.0"], cli_env, tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "error: framework_requirement 'six==1.16.0' needs an isolated environment built from it, " \
           "but the demo plugin runs in the current interpreter" in proc.stderr


def test_env_build_prepares_the_run_s_environment_offline_and_the_run_reuses_it(offline_env, wheelhouse,
                                                                              tmp_path):
    build = ["env", "build", "--case", "demo_steps", "--framework", "demo_venv",
             "--set", f"framework_requirement={WHEELHOUSE_APP}"]
    proc = run_cli(build, offline_env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [folder] = _envs(offline_env)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"demo_venv 2.9.0.post0: built isolated environment {folder} in ")
    assert lines[1:] == [
        f"python: {offline_env['HARNESS_CACHE_DIR']}/envs/{folder}/bin/python",
        f"requirements: {WHEELHOUSE_APP}",
        f"wheels from: {wheelhouse}",
    ]
    assert not (tmp_path / "results").exists()  # nothing ran, no run folder
    listing = run_cli(["env", "list"], {**offline_env, "COLUMNS": "300"}, tmp_path)
    assert str(wheelhouse) in listing.stdout and folder in listing.stdout
    run = run_cli([*RUN, "--json", "--set", f"framework_requirement={WHEELHOUSE_APP}"],
                  offline_env, tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "reusing environment" in run.stderr and _envs(offline_env) == [folder]
    again = run_cli(build, offline_env, tmp_path)
    assert again.returncode == 0 and "reused isolated environment" in again.stdout


def test_env_build_of_a_missing_wheel_is_one_line_exit_2(offline_env, wheelhouse, tmp_path):
    proc = run_cli(["env", "build", "--case", "demo_steps", "--framework", "demo_venv",
                    "--set", "framework_requirement=idna==3.7"], offline_env, tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: the wheelhouse {wheelhouse} has no wheel for idna; add it there (pip download "
        "--only-binary=:all: -d DIR 'idna' on a connected machine, see docs/airgapped.md)")
    assert _envs(offline_env) == []


def test_env_build_of_a_framework_in_the_current_interpreter_has_nothing_to_build(cli_env, tmp_path):
    proc = run_cli(["env", "build", "--case", "demo_steps", "--framework", "demo"], cli_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("demo runs in the current interpreter (")
    assert proc.stdout.rstrip().endswith("); there is no environment to build")


def test_a_sweep_builds_its_environments_from_its_wheelhouse_option(offline_env, wheelhouse, tmp_path):
    del offline_env["HARNESS_WHEELHOUSE"]  # the option alone
    proc = run_cli(["sweep", "--case", "demo_steps", "--framework", "demo_venv",
                    "--wheelhouse", str(wheelhouse)], offline_env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    [folder] = _envs(offline_env)
    record = json.loads((Path(offline_env["HARNESS_CACHE_DIR"]) / "envs" / folder
                         / "harness-env.json").read_text())
    assert record["wheelhouse"] == str(wheelhouse) and record["requirements"] == ["six==1.16.0"]
    missing = run_cli(["sweep", "--case", "demo_steps", "--framework", "demo_venv",
                       "--wheelhouse", str(tmp_path / "nowhere")], offline_env, tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.strip().splitlines()[-1].startswith(
        f"error: --wheelhouse {tmp_path / 'nowhere'}: no such folder;")
