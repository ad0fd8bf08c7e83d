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
