"""The GPU certification bundles committed under ``benchmarks/certify/bundles/`` (recorded on
H200s) verify on any machine with their public keys: every figure is recomputed from their
logs, and their convergence against the committed reference band of their point. The test
fails when verify's rules, the log parser or those bands change so that a real GPU bundle no
longer verifies."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.certify.verify import EXIT_VERIFIED
from harness.cli.main import main

BUNDLES = Path(__file__).resolve().parents[3] / "benchmarks" / "certify" / "bundles"

GPU_BUNDLES = {
    # bundle name: the system line it must show
    "certify-gpu_4gpu-nvidia-20261128-030546": "4 x NVIDIA H200",  # gpt3_1.3B on 4 GPUs
    "certify-mobilenet_v1-nvidia-20261128-083703": "1 x NVIDIA H200",  # the seeds' MobileNetV1 suite
}


@pytest.mark.parametrize("name", sorted(GPU_BUNDLES))
def test_a_committed_gpu_bundle_verifies(name, capsys):
    bundle = BUNDLES / f"{name}.tar.gz"
    code = main(["certify", "verify", str(bundle), "--pubkey", str(BUNDLES / f"{name}.pub")])
    out = capsys.readouterr().out
    assert code == EXIT_VERIFIED, out
    assert GPU_BUNDLES[name] in out
    for check in ("suite", "rules", "read_back", "repeats", "flops", "noise", "convergence", "health"):
        assert f"pass {check}" in out, check
    assert "note:" not in out  # judged against the very bands committed beside it


def test_every_committed_bundle_is_tested():
    assert sorted(p.name.removesuffix(".tar.gz") for p in BUNDLES.glob("*.tar.gz")) == sorted(GPU_BUNDLES)
