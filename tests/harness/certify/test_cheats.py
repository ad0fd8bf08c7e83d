"""The cheat suite: every way a dishonest vendor package found to get a certification it had
not earned, each as a third-party plugin (``cheats.py``) or a bundle edit, each ending
``invalid``, a failed certification or a failed verification with a reason naming it.

Fast cheats run here; the ones that need real training are marked slow.
"""

from __future__ import annotations

import pytest

from harness.app import Harness
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
@pytest.mark.parametrize("cheat, named", [
    ("LogTimeEditor", "train.log was changed after the harness captured it"),
    ("SlowestLinesDeleter", "train.log was changed after the harness captured it"),
])
def test_a_log_edited_after_the_run_is_invalid(tmp_path, cheat, named):
    from tests.harness.certify import cheats

    result = _run_with(tmp_path, getattr(cheats, cheat)())
    assert result.status == "invalid" and named in result.failure_reason


@pytest.mark.slow
def test_a_slowed_clock_inside_the_training_process_is_invalid(tmp_path):
    from tests.harness.certify.cheats import SlowClock

    result = _run_with(tmp_path, SlowClock(tmp_path / "site"))
    assert result.status == "invalid"
    assert "log claims" in result.failure_reason and "harness timed" in result.failure_reason


@pytest.mark.slow
def test_an_honest_run_passes_and_its_log_replayed_is_invalid(tmp_path):
    from tests.harness.certify.cheats import CheatingVendor, Replayer

    honest = _run_with(tmp_path / "honest", CheatingVendor())  # the same vendor, no cheat
    assert honest.status == "success", honest.failure_reason
    witness = honest.repeats[0].witness
    assert witness.step_records == 12 and witness.timed_throughput > 0
    stored = tmp_path / "honest" / "results" / honest.run_id / "train.log"
    result = _run_with(tmp_path / "replayed", Replayer(stored))
    assert result.status == "invalid"
    assert "log claims" in result.failure_reason and "harness timed" in result.failure_reason
