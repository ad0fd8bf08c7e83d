"""Each hook, exercised through a plugin registered on an injected plugin manager."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import typer

from harness import hookimpl
from harness.cli.main import build_app
from harness.models import (
    CaseSpec, DatasetInfo, DeviceInfo, DeviceSet, ExecutionEnv, FrameworkSpec, LaunchSpec,
    ParsedLog, StepRecord, VendorSpec,
)
from harness.models.vendor_config import VendorCaseConfig
from harness.registry import DuplicateRegistrationWarning
from harness.logformats.megatron import MegatronFormat
from harness.runner.observer import RunObserver
from harness.runner.pipeline import RunRequest, run_benchmark
from tests.harness.core_harness import core_harness

CASE = CaseSpec(
    name="toy", model="toy-model", dataset="toy-data", unit="samples/s", mission_name="m",
    direction_id=1, legacy_prefix="t", settings={"max_steps": 3, "skip_steps": 1},
    params={"width": 4, "tag": "a"}, vendor_overridable=frozenset({"width"}),
)


class ToyPlugin:
    """A framework + vendor + case, recording the calls it gets."""

    def __init__(self):
        self.calls: list[str] = []

    @hookimpl
    def register_cases(self, register):
        register(CASE)

    @hookimpl
    def register_frameworks(self, register):
        register(FrameworkSpec(name="toyfw", models=frozenset({"toy-model"}), log_format="megatron"))

    @hookimpl
    def register_log_formats(self, register):
        class ToyFormat(MegatronFormat):
            name = "toy-format"
        register(ToyFormat())

    @hookimpl
    def register_commands(self, cli):
        @cli.command("toy-hello")
        def hello():
            """Say hello."""
            typer.echo("hello from toy")

    @hookimpl
    def prepare_env(self, context):
        self.calls.append("prepare_env")
        return ExecutionEnv(python=sys.executable, framework="toyfw", framework_version="9.9")

    @hookimpl
    def prepare_data(self, context):
        self.calls.append("prepare_data")
        return DatasetInfo(kind="toy-data", path=str(context.data_dir), synthesized=True)

    @hookimpl
    def run(self, context, env, dataset):
        self.calls.append("run")
        width = context.config.params["width"]
        code = "".join(
            f"print(' iteration {i}/3 | elapsed time per iteration (ms): 100.0 | "
            f"global batch size: {width} | lm loss: {3.0 / i} |');"
            for i in (1, 2, 3)
        )
        return LaunchSpec(argv=[env.python, "-c", code], log_format="megatron")

    @hookimpl
    def parse_log(self, context, log_path):
        self.calls.append("parse_log")
        return MegatronFormat().parse_file(log_path)


class VendorWrapper:
    """The toy vendor: its devices and config, and wrappers of run (adds a variable) and
    execute (adds a measurement). Calls are recorded in the framework plugin's list."""

    def __init__(self, calls: list[str] | None = None):
        self.calls = calls if calls is not None else []

    @hookimpl
    def register_vendors(self, register):
        register(VendorSpec(name="toyvendor", device_kind="cpu"))

    @hookimpl
    def discover_devices(self, vendor):
        self.calls.append("discover_devices")
        return DeviceSet(vendor="toyvendor", kind="cpu", devices=[DeviceInfo(index=0, name="toy")])

    @hookimpl
    def vendor_case_config(self, vendor, case, framework, nproc, nnodes, hardware_config):
        self.calls.append("vendor_case_config")
        return VendorCaseConfig(name="toy_config", values={"width": 8})

    @hookimpl(wrapper=True)
    def run(self, context, env, dataset):
        launch = yield
        return launch.model_copy(update={"env": {**launch.env, "TOY_VISIBLE": "0"}})

    @hookimpl(wrapper=True)
    def execute(self, context, launch, log_path, observer):
        assert launch.env["TOY_VISIBLE"] == "0"
        outcome = yield
        outcome.extras["toy_monitor"] = 42.0
        return outcome


@pytest.fixture
def toy():
    plugin = ToyPlugin()
    harness = core_harness(plugin, VendorWrapper(plugin.calls))
    return harness, plugin


@pytest.fixture
def toy_report(toy, tmp_path):
    harness, plugin = toy
    request = RunRequest(case="toy", vendor="toyvendor", framework="toyfw", output=tmp_path / "results",
                         cache_dir=tmp_path / "cache")
    return run_benchmark(harness, request), plugin


def test_hook_register_cases(toy):
    registry = toy[0].registry
    assert registry.cases.get("toy") == CASE
    assert "gpt3_6.7B" in registry.cases


def test_hook_register_frameworks(toy):
    registry = toy[0].registry
    assert registry.frameworks_for(CASE) == ["toyfw"]


def test_hook_register_vendors(toy):
    assert "toyvendor" in toy[0].registry.vendors


def test_hook_register_log_formats(toy):
    formats = toy[0].registry.log_formats
    assert "toy-format" in formats and "megatron" in formats


def test_hook_register_commands(toy, capsys):
    app = build_app(toy[0])
    assert app(["toy-hello"], standalone_mode=False) is None
    assert "hello from toy" in capsys.readouterr().out


def test_hook_discover_devices(toy_report):
    report, plugin = toy_report
    assert report.result.devices.devices[0].name == "toy"
    assert plugin.calls[0] == "discover_devices"


def test_hook_vendor_case_config(toy_report):
    report, _ = toy_report
    assert report.result.config.params["width"] == 8
    assert report.result.config.hardware_config == "toy_config"
    assert report.result.config.sources["width"] == "vendor:toy_config"


def test_hook_prepare_env(toy_report):
    assert toy_report[0].result.framework_version == "9.9"


def test_hook_prepare_data(toy_report):
    assert toy_report[0].result.dataset.kind == "toy-data"


def test_hook_run(toy_report):
    report, plugin = toy_report
    assert plugin.calls == ["discover_devices", "vendor_case_config", "prepare_env", "prepare_data",
                            "run", "parse_log"]
    assert report.result.status == "success"


def test_hook_execute(toy_report):
    report, _ = toy_report
    assert report.result.device_metrics == {"toy_monitor": 42.0}
    assert len((report.run_dir / "train.log").read_text().splitlines()) == 3


def test_hook_parse_log(toy_report):
    result = toy_report[0].result
    # 8 samples per step (vendor config width=8) in 0.1 s; step 1 skipped.
    assert result.throughput.value == pytest.approx(80.0)
    assert result.loss_first == pytest.approx(3.0) and result.loss_final == pytest.approx(1.0)
    assert result.steps_completed == 3


def test_observer_sees_every_line(toy, tmp_path):
    harness, _ = toy
    seen = []

    class Recorder(RunObserver):
        def on_line(self, line):
            seen.append(line)

    request = RunRequest(case="toy", vendor="toyvendor", framework="toyfw", output=tmp_path / "r",
                         cache_dir=tmp_path / "c")
    run_benchmark(harness, request, observer=Recorder())
    assert len(seen) == 3


def test_parsed_log_with_nan_marks_failure(tmp_path):
    class NanParser(ToyPlugin):
        @hookimpl
        def parse_log(self, context, log_path):
            return ParsedLog(format="x", steps=[StepRecord(step=1, throughput=1.0, loss=float("nan"))],
                             errors=["non-finite loss at iteration 1"])

    plugin = NanParser()
    harness = core_harness(plugin, VendorWrapper(plugin.calls))
    request = RunRequest(case="toy", vendor="toyvendor", framework="toyfw", output=tmp_path / "r",
                         cache_dir=tmp_path / "c")
    result = run_benchmark(harness, request).result
    assert result.status == "failed" and "non-finite loss" in result.failure_reason


def test_global_batch_comes_from_the_log_when_it_prints_one(toy, tmp_path):
    # The toy framework prints "global batch size: 8" while settings say 8 x 1 x 1 = 8 by
    # default; a vendor config of width 8 and micro batch 2 makes them differ.
    harness, _ = toy
    request = RunRequest(case="toy", vendor="toyvendor", framework="toyfw", output=tmp_path / "r",
                         cache_dir=tmp_path / "c", micro_batch_size=2)
    result = run_benchmark(harness, request).result
    assert result.micro_batch_size == 2 and result.global_batch_size == 8


def test_result_carries_the_loss_curve_of_the_log(toy_report):
    summary = toy_report[0].result.log_summary
    assert summary.format == "megatron" and summary.steps_parsed == 3
    assert summary.loss_curve == [(1, 3.0), (2, 1.5), (3, 1.0)]
    assert (summary.first_step, summary.last_step) == (1, 3)


# --------------------------------------------------------------------------- routing


def test_a_plugin_cannot_answer_for_a_framework_or_vendor_it_did_not_register(toy, tmp_path):
    """Hooks reach only the owners: a bystander's run, parse_log, execute wrapper and device
    discovery are never called for the toy framework and vendor."""
    harness, plugin = toy

    class Bystander:
        def __init__(self):
            self.calls: list[str] = []

        @hookimpl(tryfirst=True)
        def run(self, context, env, dataset):
            self.calls.append("run")
            return LaunchSpec(argv=[sys.executable, "-c", "print('faked')"], log_format="megatron")

        @hookimpl(tryfirst=True)
        def parse_log(self, context, log_path):
            self.calls.append("parse_log")

        @hookimpl(wrapper=True)
        def execute(self, context, launch, log_path, observer):
            self.calls.append("execute")
            return (yield)

        @hookimpl(tryfirst=True)
        def discover_devices(self, vendor):
            self.calls.append("discover_devices")

    bystander = Bystander()
    harness.pm.register(bystander)
    request = RunRequest(case="toy", vendor="toyvendor", framework="toyfw", output=tmp_path / "r",
                         cache_dir=tmp_path / "c")
    result = run_benchmark(harness, request).result
    assert result.status == "success" and result.steps_completed == 3
    assert bystander.calls == []
    assert plugin.calls[:2] == ["discover_devices", "vendor_case_config"]


def test_a_duplicate_registration_is_skipped_with_a_warning_naming_both_plugins():
    class Impostor:
        @hookimpl
        def register_frameworks(self, register):
            register(FrameworkSpec(name="toyfw", models=frozenset({"toy-model"}), log_format="megatron"))

        @hookimpl
        def register_cases(self, register):
            register(CASE.model_copy(update={"params": {"width": 1, "tag": "fake"}}))

    harness = core_harness(ToyPlugin(), Impostor())
    with pytest.warns(DuplicateRegistrationWarning) as caught:
        registry = harness.registry
    impostor = next(name for name, p in harness.pm.list_name_plugin() if isinstance(p, Impostor))
    toy = next(name for name, p in harness.pm.list_name_plugin() if type(p) is ToyPlugin)
    assert registry.frameworks.owner("toyfw") == toy and registry.cases.owner("toy") == toy
    assert registry.cases.get("toy").params["tag"] == "a"
    assert {(s.kind, s.name, s.skipped_plugin, s.kept_plugin) for s in registry.skipped} == {
        ("framework", "toyfw", impostor, toy), ("case", "toy", impostor, toy)}
    messages = [str(w.message) for w in caught]
    assert all("(passed in)" in m and impostor in m and toy in m for m in messages)
