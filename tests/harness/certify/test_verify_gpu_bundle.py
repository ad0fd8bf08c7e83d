"""The GPU certification bundles committed under ``benchmarks/certify/bundles/`` (recorded on
H200s) verify on any machine with their public keys: every figure is recomputed from their
logs, and their convergence against the committed reference band of their point. Two of them
failed certification on one check, the repeats' noise (docs/certify.md, "Noise on one H200"),
and verify recomputes exactly that verdict; the same suites recorded again with CUDA graphs pass. The test fails when verify's rules, the log parser
or those bands change so that a real GPU bundle's verdict changes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.certify.verify import EXIT_CHECK_FAILED, EXIT_VERIFIED
from harness.cli.main import main

BUNDLES = Path(__file__).resolve().parents[3] / "benchmarks" / "certify" / "bundles"
CHECKS = ("suite", "rules", "read_back", "repeats", "flops", "noise", "convergence", "health")

GPU_BUNDLES = {
    # bundle name: (the system line it must show, the checks that fail)
    "certify-gpu_4gpu-nvidia-20261128-030546": ("4 x NVIDIA H200", ()),  # gpt3_1.3B on 4 GPUs
    "certify-gpt3-nvidia-20261128-171420": ("1 x NVIDIA H200", ()),  # gpt3_1.3B and 6.7B
    # MobileNetV1 at its rate of 0.025, replayed as CUDA graphs (171539) and eager (171707)
    "certify-mobilenet_v1-nvidia-20261128-171539": ("1 x NVIDIA H200", ()),
    "certify-mobilenet_v1-nvidia-20261128-171707": ("1 x NVIDIA H200", ()),
    # BERT (CV 9.28% and 6.46%) and ResNet-50 (3.79% and 5.56%) against the suites' 3% bound
    "certify-ngc_bert_base-nvidia-20261128-084650": ("1 x NVIDIA H200", ("noise",)),
    "certify-resnet50-nvidia-20261128-090405": ("1 x NVIDIA H200", ("noise",)),
    # The same two suites after the vendor's defaults replayed their steps as CUDA graphs:
    # BERT CV 0.94% and 1.18%, ResNet-50 0.14% and 2.82%, every check passes
    "certify-ngc_bert_base-nvidia-20261128-113549": ("1 x NVIDIA H200", ()),
    "certify-resnet50-nvidia-20261128-113549": ("1 x NVIDIA H200", ()),
}


@pytest.mark.parametrize("name", sorted(GPU_BUNDLES))
def test_a_committed_gpu_bundle_keeps_its_verdict(name, capsys):
    system, failing = GPU_BUNDLES[name]
    bundle = BUNDLES / f"{name}.tar.gz"
    code = main(["certify", "verify", str(bundle), "--pubkey", str(BUNDLES / f"{name}.pub")])
    out = capsys.readouterr().out
    assert code == (EXIT_CHECK_FAILED if failing else EXIT_VERIFIED), out
    assert system in out and "signature valid, signed by the trusted key" in out
    for check in CHECKS:
        verdicts = set(re.findall(rf"^(pass|FAIL) {check}\b", out, re.MULTILINE))
        assert verdicts == ({"FAIL"} if check in failing else {"pass"}), (check, out)
    assert "note:" not in out and "claim:" not in out  # judged against the bands committed beside it


def test_every_committed_bundle_is_tested():
    assert sorted(p.name.removesuffix(".tar.gz") for p in BUNDLES.glob("*.tar.gz")) == sorted(GPU_BUNDLES)
