"""The check of a vendor's declared peak against the device's measured dense matmul rate."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from harness import hookimpl
from harness.app import Harness
from harness.certify.probe import PROBE_MARGIN, PeakProbe, check
from harness.models import DeviceInfo, DeviceSet, ExecutionEnv, FrameworkSpec, MatmulRate, VendorSpec
from harness.runner.pipeline import RunRequest, plan

RATE = MatmulRate(flops_per_s=40e9, size=1024, dtype="torch.float32", device="cpu")


def _probe(peak, rate=RATE):
    return PeakProbe(framework="pytorch", precision="fp32", rate=rate, declared_peak=peak,
                     peak_source="device_peak_flops of acme_vendor (acme-harness 1.0)")


def _runs(*mfus):
    return [SimpleNamespace(status="success", efficiency=SimpleNamespace(mfu=m)) for m in mfus]


def test_an_honest_peak_and_mfu_pass():
    verdict = check(_probe(100e9), _runs(0.2, 0.3), "p")
    assert verdict.passed and "40.0% of the declared peak" in verdict.reason


def test_a_peak_below_what_the_device_measured_fails_naming_who_declared_it():
    verdict = check(_probe(10e9), _runs(0.9), "p")  # 4x below the 40 GFLOP/s measured
    assert not verdict.passed
    assert "device_peak_flops of acme_vendor (acme-harness 1.0) declares a peak of 0.01 TFLOP/s" in verdict.reason
    assert "4.0x the declared peak" in verdict.reason and "understated" in verdict.reason
    # within the margin: a probe a little above the datasheet is noise, not a cheat
    assert check(_probe(40e9 / (1 + PROBE_MARGIN)), _runs(0.5), "p").passed


def test_an_mfu_above_what_the_probe_allows_fails():
    verdict = check(_probe(100e9), _runs(0.2, 0.6), "p")  # allowed: 40% x 1.25 = 50%
    assert not verdict.passed and "MFU 60.0% against the declared peak exceeds the 50.0%" in verdict.reason


def _launched(run_id, **env):
    launch = SimpleNamespace(env=env)
    return SimpleNamespace(run_id=run_id, status="success", efficiency=SimpleNamespace(mfu=0.1),
                           provenance=SimpleNamespace(launches=[launch]))


def test_the_runs_must_have_been_launched_with_the_probes_variables():
    """A vendor's wrapper that gives the probe one thread (a slower probe: an understated
    peak within the margin) and the runs more fails, naming both."""
    probe = _probe(100e9).model_copy(update={"variables": {"OMP_NUM_THREADS": "1"}})
    assert check(probe, [_launched("r1", OMP_NUM_THREADS="1")], "p").passed
    verdict = check(probe, [_launched("r1", OMP_NUM_THREADS="1"), _launched("r2", OMP_NUM_THREADS="8")], "p")
    assert not verdict.passed
    assert verdict.reason.startswith("the probe ran with OMP_NUM_THREADS=1, run r2 was launched "
                                     "with OMP_NUM_THREADS=8")
    assert "(unset)" in check(probe, [_launched("r3")], "p").reason


def test_without_a_probe_or_a_peak_nothing_is_bounded_and_it_says_so():
    assert "no matmul probe for pytorch" in check(_probe(100e9, rate=None), _runs(0.9), "p").reason
    assert "no declared peak" in check(_probe(None), _runs(), "p").reason


class ProbedFramework:
    """A third-party framework with a probe of its own."""

    @hookimpl
    def register_frameworks(self, register):
        register(FrameworkSpec(name="probefw", description="probe test", models=frozenset({"gpt"}),
                               log_format="megatron"))

    @hookimpl
    def matmul_probe(self, context, env):
        return RATE


def test_hook_matmul_probe(tmp_path):
    harness = Harness.load(load_entrypoints=False, extra=(ProbedFramework(),))
    context = plan(harness, RunRequest(case="gpt3_125M", vendor="cpu", framework="probefw",
                                       scale="smoke", output=tmp_path))
    router = harness.router(context)
    assert router.matmul_probe(context, ExecutionEnv(python="python", framework="probefw")) == RATE
    assert set(router.hooks_by_plugin()) >= {harness.router().framework_owner("probefw")}


@pytest.mark.slow
def test_the_torch_probe_measures_the_cpu(tmp_path):
    """The PyTorch plugin's probe: real torch matmuls on the host CPU, a second or two."""
    harness = Harness.load(load_entrypoints=False)
    context = plan(harness, RunRequest(case="gpt3_125M", vendor="cpu", scale="smoke", output=tmp_path))
    router = harness.router(context)
    rate = router.matmul_probe(context, router.prepare_env(context))
    assert rate.flops_per_s > 1e8 and rate.device == "cpu" and rate.dtype == "torch.float32"


class OneCoreVendor:
    """A vendor whose device is one core: its run wrapper gives each process one thread."""

    name = "onecore"

    def __init__(self, fail: bool = False):
        self.fail = fail

    @hookimpl
    def register_vendors(self, register):
        from tests.harness.tampering_vendors import HOST_CPU

        register(VendorSpec(name=self.name, description="probe test vendor", device_kind="cpu",
                            backend=HOST_CPU.model_copy(update={"launch_env": frozenset({"OMP_NUM_THREADS"})})))

    @hookimpl
    def discover_devices(self, vendor):
        return DeviceSet(vendor=self.name, kind="cpu", devices=[DeviceInfo(index=0, name="core 0")])

    @hookimpl(wrapper=True)
    def run(self, context, env, dataset):
        launch = yield
        if self.fail:  # a wrapper that needs the run's folder, which does not exist before the run
            (context.run_dir / "config.json").read_text()
        return launch.model_copy(update={"env": {**launch.env, "OMP_NUM_THREADS": "1"}})


@pytest.mark.parametrize("fail", [False, True])
def test_the_probe_runs_as_one_process_of_the_point(tmp_path, fail):
    """With the variables the vendor gives one training process (its threads), without the
    interpreter's; as it is where the vendor's wrapper cannot give them before the run."""
    from harness.certify.probe import _one_process_env

    harness = Harness.load(load_entrypoints=False, extra=(OneCoreVendor(fail),))
    context = plan(harness, RunRequest(case="gpt3_125M", vendor="onecore", framework="pytorch",
                                       scale="smoke", output=tmp_path, cache_dir=tmp_path / "cache"))
    router = harness.router(context)
    env = ExecutionEnv(python=sys.executable, framework="pytorch", env={"FRAMEWORK_KNOB": "1"})
    probed = _one_process_env(router, context, env)
    if fail:
        assert probed == env
    else:
        assert probed.env["OMP_NUM_THREADS"] == "1" and probed.env["FRAMEWORK_KNOB"] == "1"
        assert not any(name.startswith("PYTHON") for name in probed.env)  # the launch's PYTHONPATH


@pytest.mark.slow
def test_the_probe_records_what_the_vendor_gave_it(tmp_path):
    """The torch probe on one thread, timed by its CPU time; the variable is recorded."""
    from harness.certify.probe import measure

    harness = Harness.load(load_entrypoints=False, extra=(OneCoreVendor(),))
    context = plan(harness, RunRequest(case="gpt3_125M", vendor="onecore", framework="pytorch",
                                       scale="smoke", output=tmp_path, cache_dir=tmp_path / "cache"))
    probe = measure(harness, context)
    assert probe.variables == {"OMP_NUM_THREADS": "1"}
    assert probe.rate.flops_per_s > 1e8 and probe.rate.clock == "thread_cpu"
