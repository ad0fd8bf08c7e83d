"""The cheat suite: every way a dishonest vendor package found to get a certification it had
not earned, each as a third-party plugin (``cheats.py``) or a bundle edit, each ending
``invalid``, a failed certification or a failed verification with a reason naming it.

Fast cheats run here; the ones that need real training are marked slow.
"""

from __future__ import annotations

import pytest

from harness.app import Harness
from harness.certify.evaluate import nonce_problem
from harness.readback import check_log
from harness.registry import DuplicateRegistrationWarning
from harness.runner.pipeline import RunRequest, plan
from tests.harness.certify.cheats import FlopsInflater, NameSquatter


def test_no_hook_ordering_takes_a_built_in_case_name():
    harness = Harness.load(load_entrypoints=False, extra=(NameSquatter(),))
    with pytest.warns(DuplicateRegistrationWarning, match="'gpt3_125M' of plugin .*was skipped"):
        registry = harness.registry
    assert registry.cases.owner("gpt3_125M") == "harness_cases.plugin"
    assert registry.cases.get("gpt3_125M").params["num_layers"] == 12
    [skipped] = registry.skipped
    assert skipped.kept_plugin == "harness_cases.plugin" and skipped.skipped_distribution == "(passed in)"


def test_a_dummy_case_of_the_family_does_not_answer_model_flops_for_a_built_in_case(tmp_path):
    honest = Harness.load(load_entrypoints=False).router()
    harness = Harness.load(load_entrypoints=False, extra=(FlopsInflater(),))
    context = plan(harness, RunRequest(case="gpt3_125M", output=tmp_path))
    router = harness.router()
    assert router.model_flops(context) == honest.model_flops(context)
    # The cheat is not even asked: provenance names only the case's owner for the hook.
    assert set(router.hooks_by_plugin()) == {"harness_cases.plugin"}


# ------------------------------------------------------------------ the clock and the log

def _run_with(tmp_path, vendor, max_steps=12):
    from harness.runner.pipeline import run_benchmark

    harness = Harness.load(load_entrypoints=False, extra=(vendor,))
    request = RunRequest(case="gpt3_125M", vendor=vendor.name, framework="pytorch", scale="smoke",
                         max_steps=max_steps, set_pairs=["skip_steps=4"], output=tmp_path / "results",
                         cache_dir=tmp_path / "cache")
    return run_benchmark(harness, request).result


@pytest.mark.slow
@pytest.mark.parametrize("cheat", ["LogTimeEditor", "SlowestLinesDeleter"])
def test_a_log_edited_after_the_run_is_invalid_and_the_capture_is_kept(tmp_path, cheat):
    """An execute wrapper edits only its copy: the run keeps the log as captured (its sha256
    is the witness's) and is invalid, naming the edit."""
    from harness.provenance import sha256_file
    from tests.harness.certify import cheats

    result = _run_with(tmp_path, getattr(cheats, cheat)())
    assert result.status == "invalid"
    assert f"{cheat.lower()[:4]}" and "vendor's execute wrapper changed its copy of train.log" in result.failure_reason
    log = tmp_path / "results" / result.run_id / "train.log"
    assert sha256_file(log) == result.repeats[0].witness.log_sha256
    assert not (tmp_path / "results" / result.run_id / ".wrapper-copy").exists()


@pytest.mark.slow
@pytest.mark.parametrize("cheat, named", [
    ("SlowClock", "changed PYTHONPATH (not a variable its device backend declares)"),
    ("ReadbackShadower", "changed PYTHONPATH (not a variable its device backend declares)"),
    ("Bf16LinearUserSite", "set PYTHONUSERBASE (not a variable its device backend declares)"),
])
def test_a_launch_environment_that_would_load_other_code_is_invalid(tmp_path, cheat, named):
    """A sitecustomize slowing the clock, a shadowed readback.py, a usercustomize running
    F.linear in bf16: each needs a variable the vendor's backend does not declare."""
    from tests.harness.certify import cheats

    result = _run_with(tmp_path, getattr(cheats, cheat)(tmp_path / "site"), max_steps=6)
    assert result.status == "invalid" and named in result.failure_reason
    assert not result.repeats  # refused before the launch: nothing of it ran


@pytest.mark.slow
def test_an_honest_run_passes_and_its_log_replayed_is_invalid(tmp_path):
    from tests.harness.certify.cheats import CheatingVendor, Replayer

    honest = _run_with(tmp_path / "honest", CheatingVendor())  # the same vendor, no cheat
    assert honest.status == "success", honest.failure_reason
    witness = honest.repeats[0].witness
    assert witness.step_records == 12 and witness.timed_throughput > 0
    launch = honest.provenance.launches[0]  # the core's own launch, recorded
    assert launch.argv[1:3] == ["-I", "-u"] and "script_bootstrap.py" in launch.argv[3]
    assert "PYTHONPATH" not in launch.env
    assert {"harness_pytorch/scripts/train_gpt.py", "harness_cases/shared_scripts/readback.py",
            "harness_cases/shared_scripts/gpt_windows.py"} <= set(launch.imported)
    assert launch.imported["harness_pytorch/scripts/train_gpt.py"] == \
        honest.provenance.scripts["harness_pytorch/scripts/train_gpt.py"]
    stored = tmp_path / "honest" / "results" / honest.run_id / "train.log"
    result = _run_with(tmp_path / "replayed", Replayer(stored))
    assert result.status == "invalid"
    assert "replay vendor's run wrapper replaced the command" in result.failure_reason
    from tests.harness.certify.cheats import ExecuteReplayer

    result = _run_with(tmp_path / "executed", ExecuteReplayer(stored))
    assert result.status == "invalid"
    assert ("execreplay vendor's execute replaced the harness's own execution of the training "
            "process") in result.failure_reason
    # Each repeat got its own data-order nonce: the replayed log names the honest run's.
    honest_nonce, replay_nonce = honest.repeats[0].data_nonce, result.repeats[0].data_nonce
    assert honest_nonce is not None and replay_nonce is not None and honest_nonce != replay_nonce
    assert honest.readback["data_nonce"] == honest_nonce
    replayed = tmp_path / "executed" / "results" / result.run_id / "train.log"
    check = check_log(replayed, result.config, device_kind="cpu", data_nonce=replay_nonce,
                      model_parameters=honest.readback["parameters"])
    assert f"data_nonce {honest_nonce} (expected {replay_nonce})" in check.reason()
    assert "a log of another run" in nonce_problem(replayed, replay_nonce)
    assert nonce_problem(stored, honest_nonce) is None


# ------------------------------------------------------------------------------- FLOPs


@pytest.mark.slow
def test_a_peak_lowered_4x_fails_certification_naming_it(tmp_path):
    """The honest peak is taken as what the device measurably does (the probe's rate); a
    vendor declaring a quarter of it fails the flops check, which names its plugin."""
    from pathlib import Path

    from harness.certify.runner import CertifyRequest, run_certification
    from harness.certify.suite import load_suite
    from harness.models import ExecutionEnv
    from harness_cases.shared_scripts import run_matmul_probe
    from tests.harness.certify.cheats import PeakLowerer
    from tests.harness.tampering_vendors import HOST_CPU

    import sys

    env = ExecutionEnv(python=sys.executable, framework="pytorch")
    honest = run_matmul_probe(env, "torch", HOST_CPU, "fp32").flops_per_s
    cheat = PeakLowerer(honest)
    harness = Harness.load(load_entrypoints=False, extra=(cheat,))
    suite = load_suite(str(Path(__file__).resolve().parents[2] / "fixtures" / "certify" / "one_point.toml"), harness)
    outcome = run_certification(harness, CertifyRequest(suite=suite, vendor="lowpeak", output=tmp_path,
                                                        cache_dir=tmp_path / "cache"))
    cert = outcome.certification
    [flops] = [c for c in cert.checks if c.name == "flops"]
    assert not flops.passed and not cert.passed
    assert "device_peak_flops of" in flops.reason and "understated" in flops.reason
    probe = cert.points[0].probe  # recorded: the measurement, the declared peak and its source
    assert probe.declared_peak == cheat.declared and probe.rate.flops_per_s > cheat.declared
    assert "device_peak_flops of" in probe.peak_source
