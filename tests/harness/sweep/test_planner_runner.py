"""Planning (skip reasons, resume by config hash) and running (failure isolation, Ctrl-C) of
sweeps, with the toy framework and vendor of the hook tests (no built-in framework or vendor
plugin loaded): each run is a tiny real subprocess."""

from __future__ import annotations

import json
import sys

import pytest

from harness import hookimpl
from harness.models import DeviceInfo, DeviceSet, LaunchSpec, VendorSpec
from harness.runner.observer import RunObserver
from harness.store import ResultStore
from harness.sweep.planner import SweepOptions, plan_sweep
from harness.sweep.progress import SweepObserver, SweepProgress
from harness.sweep.runner import SWEEP_FILE, run_sweep
from harness.sweep.spec import SweepPoint, apply_cli_axes
from tests.harness.core_harness import core_harness
from tests.harness.test_hooks import ToyPlugin, VendorWrapper


class ToyGpuVendor:
    """Two fake GPUs that lack fp16; runs with width 13 crash."""

    @hookimpl
    def register_vendors(self, register):
        register(VendorSpec(name="toygpu", device_kind="gpu"))

    @hookimpl
    def discover_devices(self, vendor):
        return DeviceSet(vendor="toygpu", kind="gpu",
                         devices=[DeviceInfo(index=i, name="Toy GPU") for i in range(2)])

    @hookimpl
    def unsupported_reason(self, context):
        if context.config.settings.precision == "fp16":
            return "Toy GPU has no fp16 units"
        return None

    @hookimpl(wrapper=True)
    def run(self, context, env, dataset):
        launch = yield
        if context.config.params["width"] == 13:
            return LaunchSpec(argv=[sys.executable, "-c", "raise SystemExit('boom')"],
                              log_format="megatron", env=launch.env)
        return launch


@pytest.fixture
def toy_pm():
    harness = core_harness(ToyPlugin(), VendorWrapper(), ToyGpuVendor())
    return harness, harness.registry


def _options(tmp_path):
    return SweepOptions(output=tmp_path / "results", cache_dir=tmp_path / "cache")


def _points(**axes):
    return apply_cli_axes([], {"case": ["toy"], "framework": ["toyfw"], "vendor": ["toyvendor"], **axes}, {})


def test_skip_reasons(toy_pm, tmp_path):
    harness, registry = toy_pm
    points = _points(vendor=["toygpu"], nproc=[1, 4], precision=["fp32", "fp16"])
    points += [SweepPoint(case="toy", framework="nosuchfw", vendor="toyvendor"),
               SweepPoint(case="nosuchcase", vendor="toyvendor"),
               SweepPoint(case="toy", vendor="toygpu", nnodes=2, nproc=1),
               SweepPoint(case="toy", framework="toyfw", vendor="toyvendor", set=(("nosuchkey", 1),))]
    planned = plan_sweep(harness, points, _options(tmp_path))
    states = [(p.point.nproc, p.point.precision, p.state) for p in planned[:4]]
    assert states == [(1, "fp32", "todo"), (1, "fp16", "skipped"), (4, "fp32", "skipped"),
                      (4, "fp16", "skipped")]
    assert planned[1].reason == "Toy GPU has no fp16 units"
    assert "needs 4 toygpu devices per node; this machine has 2" in planned[2].reason
    assert planned[4].state == "skipped" and "framework 'nosuchfw' is not installed" in planned[4].reason
    assert planned[5].state == "skipped" and "case 'nosuchcase'" in planned[5].reason
    assert planned[6].state == "skipped" and "MASTER_ADDR" in planned[6].reason
    assert planned[7].state == "invalid" and "nosuchkey" in planned[7].reason
    assert planned[0].repeat == 3  # default on accelerators at full scale


def test_resume_failure_isolation_and_markers(toy_pm, tmp_path):
    harness, registry = toy_pm
    options = _options(tmp_path)
    points = apply_cli_axes(_points(vendor=["toygpu"], repeat=[1]),
                            {"set": [{"width": 4}, {"width": 13}, {"width": 6}]}, {})
    lines: list[str] = []
    summary = run_sweep(harness, "toy-sweep", plan_sweep(harness, points, options), options,
                        emit=lines.append)
    assert [r.status for r in summary.rows] == ["success", "failed", "success"]
    assert summary.exit_code == 1 and "boom" in summary.rows[1].reason
    assert lines[0].startswith("sweep: run 1 of 3 | elapsed 0:00 | estimate after the first run")
    assert "run 3 of 3" in lines[2] and "left" in lines[2]
    first = summary.rows[0]
    marker = json.loads((options.output / first.run_id / SWEEP_FILE).read_text())
    assert marker["sweep"] == "toy-sweep" and marker["point"] == 1 and marker["points"] == 3

    # Started again: the two successes are recorded (same config hash), the failure runs again.
    again = plan_sweep(harness, points, options)
    assert [p.state for p in again] == ["done", "todo", "done"]
    assert again[0].recorded.run_id == first.run_id
    assert len(ResultStore(options.output).list()) == 3
    # More repeats than recorded: not done.
    more = plan_sweep(harness, [p.merged({"repeat": 2}) for p in points[:1]], options)
    assert more[0].state == "todo"
    # --rerun runs everything.
    assert [p.state for p in plan_sweep(harness, points, SweepOptions(
        output=options.output, cache_dir=options.cache_dir, rerun=True))] == ["todo"] * 3


def test_ctrl_c_stops_the_sweep(toy_pm, tmp_path, monkeypatch):
    harness, registry = toy_pm
    options = _options(tmp_path)
    points = apply_cli_axes(_points(), {"set": [{"width": 4}, {"width": 5}, {"width": 6}]}, {})
    planned = plan_sweep(harness, points, options)
    import harness.sweep.runner as runner

    real_execute = runner.execute
    calls = []

    def interrupted_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_execute(*args, **kwargs)

    monkeypatch.setattr(runner, "execute", interrupted_second)
    summary = run_sweep(harness, "s", planned, options)
    assert [r.status for r in summary.rows] == ["success", "interrupted", "not run"]
    assert summary.exit_code == 130
    monkeypatch.setattr(runner, "execute", real_execute)
    assert [p.state for p in plan_sweep(harness, points, options)] == ["done", "todo", "todo"]


def test_unexpected_exception_is_isolated(toy_pm, tmp_path, monkeypatch):
    harness, registry = toy_pm
    options = _options(tmp_path)
    planned = plan_sweep(harness, apply_cli_axes(_points(), {"set": [{"width": 4}, {"width": 5}]}, {}),
                         options)
    import harness.sweep.runner as runner

    real_execute = runner.execute

    def broken_first(harness_, context, request, observer, **kwargs):
        if context.config.params["width"] == 4:
            raise RuntimeError("plugin bug")
        return real_execute(harness_, context, request, observer, **kwargs)

    monkeypatch.setattr(runner, "execute", broken_first)
    summary = run_sweep(harness, "s", planned, options)
    assert [r.status for r in summary.rows] == ["failed", "success"]
    assert summary.rows[0].reason.startswith("RuntimeError: plugin bug")


def test_progress_estimate_and_observer_forwarding():
    now = [100.0]
    progress = SweepProgress(4, clock=lambda: now[0])
    progress.start_run()
    assert progress.headline("a") == "sweep: run 1 of 4 | elapsed 0:00 | estimate after the first run | a"
    now[0] += 20
    progress.end_run()
    progress.start_run()
    now[0] += 5
    # one run took 20 s; 3 are left -> 60 s
    assert progress.headline() == "sweep: run 2 of 4 | elapsed 0:25 | about 1:00 left"

    class Recorder(RunObserver):
        def __init__(self):
            self.events = []

        def stage(self, name, detail=""):
            self.events.append(("stage", name))

        def start_repeat(self, context, total_steps, log_format):
            self.events.append(("start", total_steps, log_format))

        def on_line(self, line):
            self.events.append(("line", line))

        def end_repeat(self):
            self.events.append(("end",))

    inner, emitted = Recorder(), []
    observer = SweepObserver(inner, progress, emitted.append, "toy")

    class Ctx:
        repeat_index = 2

    observer.stage("train")
    observer.start_repeat(Ctx(), 10, "megatron")
    observer.on_line("x")
    observer.end_repeat()
    assert inner.events == [("stage", "train"), ("start", 10, "megatron"), ("line", "x"), ("end",)]
    assert emitted == ["sweep: run 2 of 4 | elapsed 0:25 | about 1:00 left | toy, repeat 2"]


def test_hook_unsupported_reason(tmp_path):
    """The framework's and the vendor's reasons are both collected (not firstresult); a plugin
    that registered neither the framework nor the vendor has no say."""

    class ToyFrameworkWithoutFp16(ToyPlugin):
        @hookimpl
        def unsupported_reason(self, context):
            return "toyfw has no fp16 kernels" if context.config.settings.precision == "fp16" else None

    class Bystander:
        @hookimpl
        def unsupported_reason(self, context):
            return "a bystander refuses everything"

    harness = core_harness(ToyFrameworkWithoutFp16(), ToyGpuVendor(), Bystander())
    points = _points(vendor=["toygpu"], precision=["fp32", "fp16"])
    planned = plan_sweep(harness, points, _options(tmp_path))
    assert [p.state for p in planned] == ["todo", "skipped"]
    assert set(planned[1].reason.split("; ")) == {"Toy GPU has no fp16 units",
                                                   "toyfw has no fp16 kernels"}
    assert harness.router().unsupported_reasons(planned[0].context) == []


def test_unavailable_at_run_time_is_a_skip(toy_pm, tmp_path, monkeypatch):
    from harness.errors import UnavailableError
    import harness.sweep.runner as runner

    harness, registry = toy_pm
    options = _options(tmp_path)
    planned = plan_sweep(harness, _points(), options)

    def no_gpu(*args, **kwargs):
        raise UnavailableError("framework toyfw needs a GPU")

    monkeypatch.setattr(runner, "execute", no_gpu)
    summary = run_sweep(harness, "s", planned, options)
    assert [(r.status, r.reason) for r in summary.rows] == [("skipped", "framework toyfw needs a GPU")]
    assert summary.exit_code == 0


@pytest.mark.parametrize("signum, status_code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_signal_between_two_points_stops_the_sweep_resumably(toy_pm, tmp_path, signum, status_code):
    """A real signal delivered while the sweep is between runs (announcing the second point),
    not inside one: the sweep still stops as interrupted, so the CLI prints the resume hint."""
    import os
    import signal

    harness, registry = toy_pm
    options = _options(tmp_path)
    points = apply_cli_axes(_points(), {"set": [{"width": 4}, {"width": 5}, {"width": 6}]}, {})
    planned = plan_sweep(harness, points, options)
    headlines = []

    def emit(text):
        headlines.append(text)
        if len(headlines) == 2:
            os.kill(os.getpid(), getattr(signal, signum))

    summary = run_sweep(harness, "s", planned, options, emit=emit)
    assert [r.status for r in summary.rows] == ["success", "not run", "not run"]
    assert summary.interrupted and summary.exit_code == status_code
    assert [p.state for p in plan_sweep(harness, points, options)] == ["done", "todo", "todo"]


def test_unsupported_reason_is_asked_once_per_point(tmp_path):
    """The sweep asks unsupported_reason when it plans a point and carries the answer to the
    run: a plugin's answer may be costly, and a second ask could disagree with the first."""

    class CountingToyFramework(ToyPlugin):
        def __init__(self):
            super().__init__()
            self.asked: list[int] = []

        @hookimpl
        def unsupported_reason(self, context):
            self.asked.append(context.config.params["width"])
            return None

    plugin = CountingToyFramework()
    harness = core_harness(plugin, VendorWrapper())
    options = _options(tmp_path)
    points = apply_cli_axes(_points(scale=["smoke"]),
                            {"set": [{"width": 4}, {"width": 5}]}, {})
    planned = plan_sweep(harness, points, options)
    assert [p.state for p in planned] == ["todo", "todo"]
    summary = run_sweep(harness, "s", planned, options)
    assert [r.status for r in summary.rows] == ["success", "success"]
    assert plugin.asked == [4, 5]
