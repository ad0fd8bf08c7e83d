"""End to end on the CPU: a suite that requires equivalence with a stored reference (real
training: the reference recorded by `harness equivalence`, then checked by `certify run` and
again by `certify verify` from the bundle)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.cli.main import main

pytestmark = pytest.mark.slow

SUITE = """[suite]
name = "equivalence-smoke"
kind = "smoke"
scale = "smoke"
repeats = 3
max_steps = 3
skip_steps = 1
cv_bound = 0.9
checkpoints = [3]

[suite.equivalence]
case = "gpt3_125M"
reference = "{reference}"

[[point]]
case = "gpt3_125M"
"""


def test_suite_requiring_equivalence_runs_and_verifies_it(tmp_path, capsys):
    assert main(["equivalence", "--case", "gpt3_125M", "--frameworks", "pytorch", "--steps", "2",
                 "--output", str(tmp_path / "ref")]) == 0
    [reference] = (tmp_path / "ref" / "equivalence" / "gpt3_125M").iterdir()
    (tmp_path / "suite.toml").write_text(SUITE.format(reference=reference.relative_to(tmp_path)))
    capsys.readouterr()
    main(["certify", "run", "--vendor", "cpu", "--suite", str(tmp_path / "suite.toml"),
          "--output", str(tmp_path / "out")])  # fails: no convergence band for this window
    bundle = Path(capsys.readouterr().out.strip().splitlines()[-1])
    cert = json.loads((bundle.parent / bundle.name.removesuffix(".tar.gz") / "certification.json").read_text())
    [check] = [c for c in cert["checks"] if c["name"] == "equivalence"]
    assert check["passed"], check["reason"]
    assert "pytorch trained the gpt3_125M reference state" in check["reason"]
    assert "2 steps" in check["reason"]
    main(["certify", "verify", str(bundle)])
    assert "pass equivalence: pytorch trained" in capsys.readouterr().out
