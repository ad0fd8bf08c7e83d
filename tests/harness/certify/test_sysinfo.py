"""The system description is schema-checked: a missing required field fails the check."""

from __future__ import annotations

from harness.certify.sysinfo import check_system, collect


def test_collected_description_passes(harness):
    from tests.harness.report.factory import make_result

    description = collect(harness, [make_result("r1")])
    verdict = check_system(description)
    assert verdict.passed, verdict.reason
    assert description["host"]["cores"] >= 1 and description["plugins"]
    assert "hostname" not in description["host"]  # only a hash of it


def test_a_missing_field_fails(harness):
    from tests.harness.report.factory import make_result

    description = collect(harness, [make_result("r1")])
    del description["host"]["os"]
    verdict = check_system(description)
    assert not verdict.passed and "host.os" in verdict.reason
    description = collect(harness, [])  # no run recorded any accelerator
    assert "accelerators" in check_system(description).reason


def test_the_git_commit_is_the_fingerprints(harness, monkeypatch):
    """One reading of the checkout's commit (``-dirty`` included) for results and certificates."""
    from harness.certify import sysinfo

    monkeypatch.setattr(sysinfo, "harness_git_sha", lambda: "abc123-dirty")
    assert collect(harness, [])["harness_git_sha"] == "abc123-dirty"
