"""``harness certify run`` prints its verdict with the lines ``certify verify`` uses."""

from __future__ import annotations

from harness.cli.main import main
from tests.harness.certify.fixture_bundle import BUNDLE, FIXTURES, unpack


def test_run_prints_the_verdict_as_verify_does(tmp_path, capsys, monkeypatch):
    from harness.certify import runner
    from harness.certify.record import Certification, verdict_lines

    folder = unpack(tmp_path)
    cert = Certification.model_validate_json((folder / "certification.json").read_text())
    monkeypatch.setattr(runner, "run_certification", lambda *a, **k: runner.CertifyOutcome(
        certification=cert, folder=folder, bundle_path=BUNDLE))
    code = main(["certify", "run", "--vendor", "cpu", "--suite", str(FIXTURES / "one_point.toml")])
    printed = capsys.readouterr().out.splitlines()
    lines = verdict_lines(cert.checks, cert.summaries)
    assert code == 0 and printed[:len(lines)] == lines and printed[-1] == str(BUNDLE)
    score = next(line for line in lines if line.startswith("score "))
    assert "(olympic, CV " in score
