"""The evaluation's own rules: one "same figure" tolerance, the suite digest of ``Suite``, the
health verdict re-judged from a run's log."""

from __future__ import annotations

import shutil

import pytest

from harness.certify.evaluate import REL_TOLERANCE, check_health, evaluate, reparse_run, same_figure
from tests.harness.certify.fixture_bundle import unpack
from tests.harness.test_health import H200_LOGS, LONG_RUN, SHORT_RUN, committed_result, rejudge


def test_same_figure():
    assert same_figure(1000.0, 1000.0 * (1 + REL_TOLERANCE / 2))
    assert not same_figure(1000.0, 1000.0 * (1 + REL_TOLERANCE * 2))
    assert same_figure(None, None)
    assert not same_figure(1.0, None) and not same_figure(None, 1.0)


def test_the_suite_digest_is_suite_sha256(tmp_path, registry, monkeypatch):
    from harness.certify.suite import Suite

    folder = unpack(tmp_path)
    suite_check = next(c for c in evaluate(folder, registry).checks if c.name == "suite")
    assert suite_check.passed
    monkeypatch.setattr(Suite, "sha256", property(lambda self: "0" * 64))
    suite_check = next(c for c in evaluate(folder, registry).checks if c.name == "suite")
    assert not suite_check.passed and "suite.toml differs" in suite_check.reason


def test_a_run_refused_before_its_launch_has_no_log_and_that_is_no_tampering(tmp_path, registry):
    """A run the launch check refused (a vendor's wrapper changed the launch) never wrote a
    log; a run that claims repeats or success without its log is missing it."""
    from harness.certify.evaluate import reparse_run
    from harness.models import BenchmarkResult
    from tests.harness.certify.fixture_bundle import first_run

    folder = unpack(tmp_path)
    run = first_run(folder)
    result = BenchmarkResult.model_validate_json((run / "result.json").read_text())
    (run / result.log_file).unlink()
    assert reparse_run(registry, folder, run.name).problems == [f"runs/{run.name}/train.log: missing"]
    refused = result.model_copy(update={"status": "invalid", "repeats": [],
                                        "failure_reason": "the launch check refused it"})
    (run / "result.json").write_text(refused.model_dump_json())
    assert reparse_run(registry, folder, run.name).problems == []
    claimed = refused.model_copy(update={"repeats": result.repeats})  # it ran: its log is missing
    (run / "result.json").write_text(claimed.model_dump_json())
    assert reparse_run(registry, folder, run.name).problems == [f"runs/{run.name}/train.log: missing"]


def reparse_gpu_run(tmp_path, registry, run_id):
    """Certification's re-parse of a committed H200 run: its result, config and log in a
    bundle-shaped folder."""
    result = committed_result(run_id)
    folder = tmp_path / "runs" / run_id
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(result.model_dump_json(), encoding="utf-8")
    (folder / "config.json").write_text(result.config.model_dump_json(), encoding="utf-8")
    shutil.copy(H200_LOGS / run_id / "train.log", folder / "train.log")
    return result, reparse_run(registry, tmp_path, run_id)


@pytest.mark.parametrize("run_id", [SHORT_RUN, LONG_RUN])
def test_certification_judges_a_gpu_runs_health_as_its_result_does(tmp_path, registry, run_id):
    # The health re-judged from the re-parsed log (learning rates and the config's peak
    # included) is the verdict the result builder gives on the recorded curves.
    result, evidence = reparse_gpu_run(tmp_path, registry, run_id)
    assert evidence.problems == []
    assert evidence.health == rejudge(result) and evidence.health.status == "healthy"


def test_the_health_check_names_the_rules_it_did_not_judge(tmp_path, registry):
    runs = [reparse_gpu_run(tmp_path, registry, run_id)[1] for run_id in (SHORT_RUN, LONG_RUN)]
    check = check_health(runs, "gpt3_1.3B")
    assert check.passed
    assert check.reason == ("2 runs healthy (finite, no spike above the first loss, below the uniform-guess "
                            "loss after the first steps, falling; below uniform not judged in 1 of 2)")
