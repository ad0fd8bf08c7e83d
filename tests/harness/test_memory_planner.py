"""The memory planner keeps the first candidate that fits, never overrides the command line,
and refuses in one line (exit 2) naming what would fit."""

from __future__ import annotations

import pytest

from harness import hookimpl
from harness.errors import UnavailableError
from harness.memory_planner import PLANNER_SOURCE, planner_note, usable_bytes
from harness.models import CaseSpec, DeviceInfo, DeviceSet, FrameworkSpec, VendorSpec
from harness.models.memory import MemoryCandidate, MemoryEstimate, MemoryPlan
from harness.runner.pipeline import RunRequest, plan
from tests.harness.core_harness import core_harness

GIB = 2**30
CASE = CaseSpec(
    name="toy", model="toy-model", dataset="toy-data", unit="samples/s", mission_name="m",
    direction_id=1, legacy_prefix="t", settings={"max_steps": 3, "skip_steps": 1},
    params={"width": 4, "offload": "none"}, vendor_overridable=frozenset({"width"}),
)


class ToyGpuPlugin:
    def __init__(self, memory_gib: float):
        self.memory = int(memory_gib * GIB)
        self.seen_memory: list[int] = []

    @hookimpl
    def register_cases(self, register):
        register(CASE)

    @hookimpl
    def register_frameworks(self, register):
        register(FrameworkSpec(name="toyfw", models=frozenset({"toy-model"}), log_format="megatron"))

    @hookimpl
    def register_vendors(self, register):
        register(VendorSpec(name="toygpu", device_kind="gpu"))

    @hookimpl
    def discover_devices(self, vendor):
        if vendor != "toygpu":
            return None
        return DeviceSet(vendor="toygpu", kind="gpu",
                         devices=[DeviceInfo(index=0, name="Toy GPU", memory_bytes=self.memory)])

    @hookimpl
    def memory_plan(self, context, device_memory_bytes):
        self.seen_memory.append(device_memory_bytes)
        width = context.config.params["width"]
        need = lambda gib: MemoryEstimate(total_bytes=int(gib * GIB), components={"weights": int(gib * GIB)})  # noqa: E731
        return MemoryPlan(candidates=[
            MemoryCandidate(estimate=need(width * 10), label="as configured"),
            MemoryCandidate(overrides={"width": 2}, estimate=need(20), label="narrower"),
            MemoryCandidate(overrides={"offload": "cpu"}, estimate=need(8), label="offload"),
        ], hints=[">= 2 toy GPUs"])


def planned(memory_gib: float, *set_pairs: str):
    plugin = ToyGpuPlugin(memory_gib)
    harness = core_harness(plugin)
    request = RunRequest(case="toy", vendor="toygpu", framework="toyfw", set_pairs=list(set_pairs))
    return plan(harness, request), plugin


def test_hook_memory_plan():
    context, plugin = planned(80)
    assert plugin.seen_memory == [80 * GIB]
    assert context.memory_estimate.total_bytes == 40 * GIB  # as configured: it fits
    assert PLANNER_SOURCE not in context.config.sources.values()


def test_first_fitting_candidate_is_chosen_and_recorded():
    context, _ = planned(30)  # usable 28.5 GiB: the resolved 40 GiB does not fit, width 2 does
    assert context.config.params["width"] == 2
    assert context.config.sources["width"] == PLANNER_SOURCE
    assert context.memory_estimate.total_bytes == 20 * GIB
    assert "planner set width=2" in planner_note(context)


def test_keys_set_on_the_command_line_are_never_changed():
    context, _ = planned(30, "width=4")
    assert context.config.params["width"] == 4 and context.config.params["offload"] == "cpu"


def test_keys_a_sweep_file_set_are_never_changed():
    plugin = ToyGpuPlugin(30)
    harness = core_harness(plugin)
    request = RunRequest(case="toy", vendor="toygpu", framework="toyfw", set_pairs=["width=4"],
                         origins={"width": "sweep:toy.toml"})
    context = plan(harness, request)
    assert context.config.sources["width"] == "sweep:toy.toml"
    assert context.config.params["width"] == 4 and context.config.params["offload"] == "cpu"


def test_nothing_fits_is_a_one_line_refusal_naming_what_would():
    with pytest.raises(UnavailableError) as error:  # the refusal of unsupported_reason's kind
        planned(10, "width=4", "offload=none")
    message = str(error.value)
    assert "\n" not in message and error.value.exit_code == 2
    assert "40.0 GiB" in message and "Toy GPU" in message
    assert "--set offload=cpu (8.0 GiB)" in message and ">= 2 toy GPUs" in message


def test_usable_memory_leaves_a_reserve():
    assert usable_bytes(80 * GIB) == 76 * GIB
    assert usable_bytes(20 * GIB) == 18 * GIB


def _toy_pm(memory_gib: float):
    return core_harness(ToyGpuPlugin(memory_gib))


def test_a_sweep_skips_a_point_that_does_not_fit_with_the_reason(tmp_path):
    from harness.sweep.planner import SweepOptions, plan_sweep
    from harness.sweep.spec import SweepPoint

    harness = _toy_pm(10)
    point = SweepPoint(case="toy", vendor="toygpu", framework="toyfw",
                       set=(("offload", "none"), ("width", 4)))
    [planned_point] = plan_sweep(harness, [point],
                                 SweepOptions(output=tmp_path / "results"))
    assert planned_point.state == "skipped"
    assert "Toy GPU" in planned_point.reason and "Would fit" in planned_point.reason


def test_harness_run_refuses_in_one_line_with_exit_2(tmp_path, capsys, monkeypatch):
    import harness.cli.main as cli_main

    app = cli_main.build_app(_toy_pm(10))
    monkeypatch.setattr(cli_main, "build_app", lambda harness=None: app)
    code = cli_main.main(["run", "--case", "toy", "--vendor", "toygpu", "--framework", "toyfw",
                          "--set", "width=4", "--set", "offload=none", "--output", str(tmp_path / "r")])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: toy needs about 40.0 GiB"), err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "r").exists()
