"""The evaluation's own rules: one "same figure" tolerance, the suite digest of ``Suite``."""

from __future__ import annotations

from harness.certify.evaluate import REL_TOLERANCE, evaluate, same_figure
from tests.harness.certify.fixture_bundle import unpack


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
