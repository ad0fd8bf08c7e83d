"""Rules are enforced before a point runs: a vendor config that moves the measurement
window is refused, and the certification fails naming the key (no training needed)."""

from __future__ import annotations

import pluggy
import pytest

from harness.models import DeviceInfo, DeviceSet, VendorSpec
from harness.models.vendor_config import VendorCaseConfig

hookimpl = pluggy.HookimplMarker("harness")
SUITE = """
[suite]
name = "one"
kind = "smoke"
scale = "smoke"
repeats = 3
max_steps = 12
skip_steps = 4
cv_bound = 0.35
checkpoints = [4, 8, 12]

[[point]]
case = "gpt3_125M"
nproc = [1]
"""


class WindowMovingVendor:
    """A vendor whose per-case config shortens the warm-up left out of FINAL_RESULT."""

    @hookimpl
    def register_vendors(self, register):
        register(VendorSpec(name="windowmover", description="test", device_kind="cpu"))

    @hookimpl
    def discover_devices(self, vendor):
        if vendor == "windowmover":
            return DeviceSet(vendor=vendor, kind="cpu", devices=[DeviceInfo(index=0, name="test cpu")])
        return None

    @hookimpl
    def vendor_case_config(self, vendor, case, framework, nproc, nnodes, hardware_config):
        if vendor == "windowmover":
            return VendorCaseConfig(name="moved.toml", values={"skip_steps": 1})
        return None


@pytest.fixture
def tampering_harness():
    from harness.app import Harness

    return Harness.load(load_entrypoints=False, extra=(WindowMovingVendor(),))


def test_a_vendor_config_moving_the_window_is_refused(tmp_path, tampering_harness):
    from harness.certify.runner import CertifyRequest, run_certification
    from harness.certify.suite import Suite, parse_suite_text

    suite = Suite(spec=parse_suite_text(SUITE, "t"), text=SUITE, source="test")
    outcome = run_certification(tampering_harness,
                                CertifyRequest(suite=suite, vendor="windowmover", output=tmp_path))
    cert = outcome.certification
    assert not cert.passed
    rules = [c for c in cert.checks if c.name == "rules"]
    assert len(rules) == 1 and not rules[0].passed and "skip_steps" in rules[0].reason
    assert cert.points[0].run_ids == []  # refused before anything ran
    assert outcome.bundle_path.is_file() and (outcome.folder / "report.html").is_file()
    assert "skip_steps" in (outcome.folder / "report.md").read_text()


def test_each_point_is_planned_once_and_each_log_parsed_once(tmp_path, harness, registry, monkeypatch):
    """``certify run`` replaying the recorded bundle's runs (execute copies them in): one plan
    and one unsupported_reason ask per point with a run of its own per repeat, one parse per log (the evaluation's, which
    the report reuses), and the recorded verdict."""
    import shutil

    from harness.certify import evaluate as evaluate_module
    from harness.certify import runner
    from harness.certify.record import Certification
    from harness.certify.suite import Suite, parse_suite_text
    from harness.models import BenchmarkResult
    from harness.runner.pipeline import RunReport
    from harness.store import ResultStore
    from tests.harness.certify.fixture_bundle import unpack

    recorded = unpack(tmp_path)
    claimed = Certification.model_validate_json((recorded / "certification.json").read_text())
    recorded_runs = iter(claimed.points[0].run_ids)
    plans, contexts, parsed = [], [], []

    def counting_plan(*args):
        plans.append(args[1])
        return real_plan(*args)

    def replay(harness, context, request, observer=None, *, unsupported=None):
        assert unsupported == []  # asked by the runner once for the point, not again per repeat
        contexts.append(context)
        run_id = next(recorded_runs)
        shutil.copytree(recorded / "runs" / run_id, request.output / run_id)
        result = BenchmarkResult.model_validate_json((request.output / run_id / "result.json").read_text())
        ResultStore(request.output).add(result, request.output / run_id)  # as a run records it
        return RunReport(result=result, run_dir=request.output / run_id, legacy_path=request.output)

    def counting_stream_log(path, *args, **kwargs):
        parsed.append(path)
        return real_stream_log(path, *args, **kwargs)

    asked = []

    def counting_unsupported_reasons(self, context):
        asked.append(context.run_id)
        return real_unsupported_reasons(self, context)

    real_plan, real_stream_log = runner.plan, evaluate_module.stream_log
    from harness.dispatch import HookRouter

    real_unsupported_reasons = HookRouter.unsupported_reasons
    monkeypatch.setattr(HookRouter, "unsupported_reasons", counting_unsupported_reasons)
    monkeypatch.setattr(runner, "plan", counting_plan)
    monkeypatch.setattr(runner, "execute", replay)
    monkeypatch.setattr(evaluate_module, "stream_log", counting_stream_log)
    text = (recorded / "suite.toml").read_text()
    suite = Suite(spec=parse_suite_text(text, "t"), text=text, source=claimed.suite_source)
    progress = []

    class Progress(runner.CertifyObserver):
        def point(self, label, repeat, repeats, index, total):
            progress.append((repeat, repeats, index, total))

    outcome = runner.run_certification(harness, runner.CertifyRequest(
        suite=suite, vendor="cpu", output=tmp_path / "out"), Progress())

    assert progress == [(1, 3, 1, 3), (2, 3, 2, 3), (3, 3, 3, 3)]
    assert len(plans) == 1
    assert len(asked) == 1  # unsupported_reason asked once for the point, not once per repeat
    assert len(contexts) == 3 and len({c.run_id for c in contexts}) == 3
    assert len({c.run_dir for c in contexts}) == 3 and all(c.run_dir.name == c.run_id for c in contexts)
    assert all(c.config is contexts[0].config for c in contexts)
    assert contexts[0].config.sources["max_steps"] == "suite:one"
    assert len(parsed) == 3 and len(set(parsed)) == 3
    cert = outcome.certification
    assert cert.passed == claimed.passed
    assert [(c.name, c.point, c.passed) for c in cert.checks] == [
        (c.name, c.point, c.passed) for c in claimed.checks]
    assert [s.score for s in cert.summaries] == [s.score for s in claimed.summaries]
    chart = next((outcome.folder / "charts").glob("loss-*.svg")).read_text()
    assert "repeat 3" in chart  # the report drew every repeat from the evaluation's parse


class TinyGpuVendor:
    """A CUDA-like GPU vendor whose device has 1 MiB usable: no config fits."""

    @hookimpl
    def register_vendors(self, register):
        from harness.models.device import DeviceBackend, FrameworkDevice

        backend = DeviceBackend(device_type="cuda", addressed_by_local_rank=True,
                                frameworks={"torch": FrameworkDevice(device_type="cuda",
                                                                     dist_backend="nccl")})
        register(VendorSpec(name="tinygpu", description="test", device_kind="gpu", backend=backend))

    @hookimpl
    def discover_devices(self, vendor):
        if vendor == "tinygpu":
            return DeviceSet(vendor=vendor, kind="gpu", devices=[
                DeviceInfo(index=0, name="tiny gpu", memory_bytes=2 * 2**30 + 2**20)])
        return None


def test_a_point_that_does_not_fit_in_memory_is_refused_as_not_runnable_here(tmp_path):
    from harness.certify.runner import CertifyRequest, run_certification
    from harness.certify.suite import Suite, parse_suite_text
    from harness.app import Harness

    harness = Harness.load(load_entrypoints=False, extra=(TinyGpuVendor(),))
    suite = Suite(spec=parse_suite_text(SUITE, "t"), text=SUITE, source="test")
    outcome = run_certification(harness,
                                CertifyRequest(suite=suite, vendor="tinygpu", output=tmp_path))
    refused = outcome.certification.points[0].refused
    assert refused.startswith("cannot run on this machine: gpt3_125M needs about"), refused
    assert "tiny gpu has" in refused and outcome.certification.points[0].run_ids == []


class RefusingVendor(WindowMovingVendor):
    """A vendor that says the run cannot run here (and counts how often it was asked)."""

    def __init__(self):
        self.asked = 0

    @hookimpl
    def vendor_case_config(self, vendor, case, framework, nproc, nnodes, hardware_config):
        return None

    @hookimpl
    def unsupported_reason(self, context):
        self.asked += 1
        return "no kernels for this test device"


def test_a_point_the_plugins_refuse_is_not_run_and_asked_once(tmp_path, monkeypatch):
    """unsupported_reason's answer refuses the point before its first repeat (not an error per
    repeat), and the plugins are asked once for it."""
    from harness.certify import runner
    from harness.certify.runner import CertifyRequest, run_certification
    from harness.certify.suite import Suite, parse_suite_text
    from harness.app import Harness

    vendor = RefusingVendor()
    harness = Harness.load(load_entrypoints=False, extra=(vendor,))
    monkeypatch.setattr(runner, "execute", lambda *a, **k: pytest.fail("a refused point ran"))
    suite = Suite(spec=parse_suite_text(SUITE, "t"), text=SUITE, source="test")
    outcome = run_certification(harness,
                                CertifyRequest(suite=suite, vendor="windowmover", output=tmp_path))
    point = outcome.certification.points[0]
    assert point.refused.startswith("cannot run on this machine: no kernels for this test device")
    assert point.errors == [] and point.run_ids == [] and vendor.asked == 1


@pytest.mark.parametrize("signal_name, exit_code", [("SIGINT", 130), ("SIGTERM", 143)])
def test_a_stop_signal_ends_the_certification_and_keeps_what_finished(tmp_path, harness, monkeypatch,
                                                                     signal_name, exit_code):
    """Ctrl-C or SIGTERM stops ``certify run`` at once (not the next repeat): the repeat that
    finished is kept, judged and bundled, and the certification cannot pass."""
    import shutil
    import signal

    from harness.certify import runner
    from harness.certify.record import Certification
    from harness.certify.suite import Suite, parse_suite_text
    from harness.models import BenchmarkResult
    from harness.runner.pipeline import RunReport
    from harness.runner.signals import Terminated
    from harness.store import ResultStore
    from tests.harness.certify.fixture_bundle import unpack

    recorded = unpack(tmp_path)
    claimed = Certification.model_validate_json((recorded / "certification.json").read_text())
    calls = []

    def replay_then_stop(harness, context, request, observer=None, *, unsupported=None):
        calls.append(context.run_id)
        if len(calls) == 2:
            raise KeyboardInterrupt if signal_name == "SIGINT" else Terminated(signal.SIGTERM)
        run_id = claimed.points[0].run_ids[0]
        shutil.copytree(recorded / "runs" / run_id, request.output / run_id)
        result = BenchmarkResult.model_validate_json((request.output / run_id / "result.json").read_text())
        ResultStore(request.output).add(result, request.output / run_id)
        return RunReport(result=result, run_dir=request.output / run_id, legacy_path=request.output)

    monkeypatch.setattr(runner, "execute", replay_then_stop)
    text = (recorded / "suite.toml").read_text()
    suite = Suite(spec=parse_suite_text(text, "t"), text=text, source=claimed.suite_source)
    outcome = runner.run_certification(harness, runner.CertifyRequest(
        suite=suite, vendor="cpu", output=tmp_path / "out"))

    cert = outcome.certification
    assert len(calls) == 2 and outcome.stop_exit_code == exit_code
    assert cert.stopped.endswith("after 1 of 3 runs; the runs that finished are kept")
    assert cert.points[0].run_ids == [claimed.points[0].run_ids[0]]
    assert not cert.passed and outcome.bundle_path.is_file()
    assert any(c.name == "suite" and not c.passed and "stopped early" in c.reason for c in cert.checks)
