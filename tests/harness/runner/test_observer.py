"""The core's step clock: when each training step's line arrived, and the measured steps' window
a vendor's execute wrapper reads from the observer it is handed."""

from __future__ import annotations

import itertools

from harness import hookimpl
from harness.logformats.megatron import MegatronFormat
from harness.runner import observer as observer_module
from harness.runner.observer import RunObserver, StepClock

from .test_read_log import CASE, LinesFramework
from tests.harness.core_harness import core_harness


class Recording(RunObserver):
    def __init__(self):
        self.lines: list[str] = []
        self.events: list[str] = []

    def stage(self, name, detail=""):
        self.events.append(f"stage {name}")

    def start_repeat(self, context, total_steps, log_format):
        self.events.append(f"start {total_steps} {log_format}")

    def on_line(self, line):
        self.lines.append(line)

    def end_repeat(self):
        self.events.append("end")


class _Context:
    class config:  # noqa: N801 - stands in for a RunContext's config
        params: dict = {}


def _line(step: int) -> str:
    return (f" iteration {step}/4 | elapsed time per iteration (ms): 100.0 | global batch size: 8 "
            f"| lm loss: 3.0 |\n")


def test_records_when_each_step_arrived_and_passes_everything_on(monkeypatch):
    ticks = itertools.count(100.0, 0.5)
    monkeypatch.setattr(observer_module.time, "monotonic", lambda: next(ticks))
    inner = Recording()
    clock = StepClock(inner, {"megatron": MegatronFormat()})
    clock.stage("train", "repeat 1/1")
    clock.start_repeat(_Context(), 4, "megatron")
    for line in ["loading...\n", _line(1), _line(2), "noise\n", _line(3), _line(4)]:
        clock.on_line(line)
    clock.end_repeat()
    assert clock.step_times == {1: 100.0, 2: 100.5, 3: 101.0, 4: 101.5}
    assert len(inner.lines) == 6 and inner.events == ["stage train", "start 4 megatron", "end"]
    # one skipped step: from step 1's line to step 4's; none skipped: from the first step's line
    assert clock.measured_window(1) == (100.0, 101.5)
    assert clock.measured_window(0) == (100.0, 101.5)
    assert clock.measured_window(2) == (100.5, 101.5)
    assert clock.measured_window(4) is None  # nothing measured
    clock.start_repeat(_Context(), 4, "megatron")  # a new repeat starts a new clock
    assert clock.step_times == {} and clock.measured_window(0) is None


def test_an_unknown_format_records_no_steps():
    clock = StepClock(Recording(), {})
    clock.start_repeat(_Context(), 4, "no-such-format")
    clock.on_line(_line(1))
    assert clock.step_times == {} and clock.measured_window(0) is None


class WindowSpyVendor(LinesFramework):
    """The lines framework, whose plugin owns the vendor, with a vendor-style execute wrapper
    that reads the step clock after the processes ran (execute reaches the vendor's plugin)."""

    def __init__(self, log_format: str):
        super().__init__(log_format)
        self.seen: list = []

    @hookimpl(wrapper=True)
    def execute(self, context, launch, log_path, observer):
        outcome = yield
        self.seen.append((sorted(observer.step_times),
                          observer.measured_window(context.config.settings.skip_steps)))
        return outcome


def test_execute_wrappers_get_the_step_clock(tmp_path):
    from harness.runner.pipeline import RunRequest, run_benchmark

    plugin = WindowSpyVendor("lines-format")
    harness = core_harness(plugin)
    report = run_benchmark(harness, RunRequest(case=CASE.name, vendor="linesvendor", framework="linesfw",
                                          output=tmp_path / "results", cache_dir=tmp_path / "cache"))
    assert report.result.status == "success", report.result.failure_reason
    (steps, window), = plugin.seen
    assert steps == [1, 2, 3, 4]
    assert window is not None and window[0] <= window[1]


def test_the_arrival_time_execute_passes_is_the_steps_time_not_when_the_line_was_handled(monkeypatch):
    monkeypatch.setattr(observer_module.time, "monotonic", lambda: 500.0)  # the harness ran late
    clock = StepClock(Recording(), {"megatron": MegatronFormat()})
    clock.start_repeat(_Context(), 4, "megatron")
    for step, arrived in [(1, 10.0), (2, 10.1), (3, 10.2)]:
        clock.on_line(_line(step), arrived)
    clock.on_line(_line(4))  # no arrival time given: the clock's own, now
    assert clock.step_times == {1: 10.0, 2: 10.1, 3: 10.2, 4: 500.0}
