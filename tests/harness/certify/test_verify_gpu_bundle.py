"""The 4-GPU certification bundle committed under ``benchmarks/certify/bundles/`` (recorded on
4 x H200) verifies on any machine with its public key: every figure is recomputed from its
logs, and its convergence against the committed reference band of its batch. The test fails
when verify's rules, the log parser or that band change so that a real GPU bundle no longer
verifies."""

from __future__ import annotations

from pathlib import Path

from harness.certify.verify import EXIT_VERIFIED
from harness.cli.main import main

BUNDLES = Path(__file__).resolve().parents[3] / "benchmarks" / "certify" / "bundles"
BUNDLE = BUNDLES / "certify-gpu_4gpu-nvidia-20261128-030546.tar.gz"


def test_the_committed_4_gpu_bundle_verifies(capsys):
    code = main(["certify", "verify", str(BUNDLE), "--pubkey", str(BUNDLE.with_suffix("").with_suffix(".pub"))])
    out = capsys.readouterr().out
    assert code == EXIT_VERIFIED, out
    assert "4 x NVIDIA H200" in out
    for name in ("suite", "rules", "read_back", "repeats", "flops", "noise", "convergence", "health"):
        assert f"pass {name}" in out, name
