"""Loading built-ins, entry-point plugins, blocked plugins and broken plugins."""

from __future__ import annotations

import json

import pluggy
import pytest

from harness import hookimpl
from harness.app import Harness
from harness.errors import UserInputError
from harness.plugin_manager import DEFAULT_PLUGINS, ESSENTIAL_PLUGINS, EssentialPluginError
from tests.conftest import run_cli


def test_builtins_are_registered_like_any_plugin():
    harness = Harness.load(load_entrypoints=False, blocked=set())
    for name in DEFAULT_PLUGINS:
        assert harness.pm.get_plugin(name) is not None
    info = harness.plugins["harness_pytorch.plugin"]
    assert "run" in info.hooks and "prepare_env" in info.hooks


def test_blocked_builtin_is_not_loaded(monkeypatch):
    monkeypatch.setenv("HARNESS_BLOCK_PLUGINS", "harness_nvidia.plugin, something_else")
    harness = Harness.load(load_entrypoints=False)
    assert harness.pm.get_plugin("harness_nvidia.plugin") is None
    assert harness.pm.get_plugin("harness_cpu.plugin") is not None


def _fail_to_import(monkeypatch, failing: str) -> None:
    import importlib

    import harness.plugin_manager

    real = importlib.import_module

    def import_module(name, *args):
        if name == failing:
            raise ModuleNotFoundError("No module named 'pynvml'")
        return real(name, *args)

    monkeypatch.setattr(harness.plugin_manager.importlib, "import_module", import_module)


def test_builtin_that_fails_to_import_is_skipped_with_a_warning(monkeypatch):
    from harness.plugin_manager import PluginLoadWarning

    _fail_to_import(monkeypatch, "harness_nvidia.plugin")
    with pytest.warns(PluginLoadWarning) as caught:
        harness = Harness.load(load_entrypoints=False, blocked=set())
    [warning] = [str(w.message) for w in caught]
    assert warning.startswith("built-in plugin 'harness_nvidia.plugin' failed to import and was "
                              "skipped: ModuleNotFoundError: No module named 'pynvml'")
    assert harness.pm.get_plugin("harness_nvidia.plugin") is None
    assert harness.pm.get_plugin("harness_cpu.plugin") is not None


@pytest.mark.parametrize("essential", sorted(ESSENTIAL_PLUGINS))
def test_an_essential_builtin_that_fails_to_import_is_an_error(monkeypatch, essential):
    _fail_to_import(monkeypatch, essential)
    with pytest.raises(EssentialPluginError, match=f"built-in plugin '{essential}' failed to import"):
        Harness.load(load_entrypoints=False, blocked=set())


def test_the_cli_says_in_one_line_that_an_essential_builtin_failed_to_import(monkeypatch, capsys):
    from harness.cli.main import main

    _fail_to_import(monkeypatch, "harness_cases.plugin")
    assert main(["list", "cases"]) == 1
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: built-in plugin 'harness_cases.plugin' failed to import")


def test_an_essential_builtin_cannot_be_blocked(monkeypatch, capsys):
    from harness.cli.main import main

    monkeypatch.setenv("HARNESS_BLOCK_PLUGINS", "harness_nvidia.plugin,harness.builtin.core_plugin")
    with pytest.raises(UserInputError, match="HARNESS_BLOCK_PLUGINS names harness.builtin.core_plugin"):
        Harness.load(load_entrypoints=False)
    assert main(["list", "vendors"]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error: HARNESS_BLOCK_PLUGINS names harness.builtin.core_plugin: the core's "
                           "own plugins cannot be blocked")


def test_cli_carries_on_without_a_builtin_that_fails_to_import(monkeypatch, capsys):
    from harness.cli.main import main

    _fail_to_import(monkeypatch, "harness_nvidia.plugin")
    assert main(["list", "vendors"]) == 0
    captured = capsys.readouterr()
    assert "cpu" in captured.out and "nvidia" not in captured.out.lower()
    [line] = captured.err.strip().splitlines()
    assert line.startswith("warning: built-in plugin 'harness_nvidia.plugin' failed to import")


def test_unknown_hook_implementation_is_rejected():
    class Typo:
        @hookimpl
        def prepare_enviroment(self, context):  # misspelled hook name
            return None

    with pytest.raises(pluggy.PluginValidationError):
        Harness.load(load_entrypoints=False, blocked=set(), extra=(Typo(),))


def test_entry_point_plugin_is_listed_with_version_and_hooks(cli_env, tmp_path):
    proc = run_cli(["plugins", "--json"], cli_env, tmp_path)
    assert proc.returncode == 0, proc.stderr
    plugins = {p["name"]: p for p in json.loads(proc.stdout)}
    demo = plugins["demo"]
    assert demo["version"] == "0.0.7"
    assert demo["source"] == "entrypoint:harness-demo-plugin"
    assert {"register_cases", "run", "parse_log"} <= set(demo["hooks"])
    assert "harness_pytorch.plugin" in plugins


def test_broken_entry_point_warns_and_names_itself(cli_env, tmp_path):
    cli_env["HARNESS_BLOCK_PLUGINS"] = "impostor_demo"
    proc = run_cli(["plugins", "--json"], cli_env, tmp_path)
    assert proc.returncode == 0
    assert "broken_demo" in proc.stderr and "failed to load" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_entry_point_plugin_can_be_blocked(cli_env, tmp_path):
    cli_env["HARNESS_BLOCK_PLUGINS"] = "demo,broken_demo,impostor_demo"
    proc = run_cli(["plugins", "--json"], cli_env, tmp_path)
    names = {p["name"] for p in json.loads(proc.stdout)}
    assert "demo" not in names and proc.stderr == ""


def test_entry_point_case_is_runnable_like_a_builtin(cli_env, tmp_path):
    proc = run_cli(["list", "cases"], cli_env, tmp_path)
    assert "demo_steps" in proc.stdout and "gpt3_6.7B" in proc.stdout


def test_a_plugin_registering_a_builtin_name_is_skipped_with_a_one_line_warning(cli_env, tmp_path):
    cli_env["HARNESS_BLOCK_PLUGINS"] = "broken_demo"
    proc = run_cli(["plugins", "--json"], cli_env, tmp_path)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr
    warning = [line for line in proc.stderr.splitlines() if "impostor_demo" in line]
    assert warning == ["warning: framework 'pytorch' of plugin impostor_demo (harness-demo-plugin) "
                       "was skipped: plugin harness_pytorch.plugin (harness-bench) registered it first"]
    plugins = {p["name"]: p for p in json.loads(proc.stdout)}
    assert plugins["impostor_demo"]["distribution"] == "harness-demo-plugin"
    assert [(s["kind"], s["name"], s["kept_plugin"])
            for s in plugins["impostor_demo"]["skipped_registrations"]] == [
        ("framework", "pytorch", "harness_pytorch.plugin")]
    table = run_cli(["plugins"], cli_env, tmp_path)
    assert "Skipped registrations" in table.stdout and "impostor_demo" in table.stdout


def test_modules_are_named_for_what_they_are():
    """A module the plugin manager registers is ``plugin`` or ``<topic>_plugin``, the core's
    own too; a module of log formats and their parsers is ``<source>_log`` (the core's own
    live in ``harness.logformats``)."""
    for name in DEFAULT_PLUGINS:
        assert name.rsplit(".", 1)[1].endswith("plugin"), name
    formats = Harness.load(load_entrypoints=False, blocked=set()).registry.log_formats
    for name, fmt in formats.items.items():
        module = type(fmt).__module__
        assert module.startswith("harness.logformats.") or module.endswith("_log"), (name, module)
