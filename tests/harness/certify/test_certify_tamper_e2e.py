"""End to end on the CPU: a vendor whose ``run`` wrapper halves GPT-3 125M's layers (in the
config file the training script reads) cannot certify it. The core's launch check refuses every
repeat before it starts, naming the changed key, so ``harness certify run`` exits 1 on its
``read_back`` and ``repeats`` checks naming num_layers, and ``harness certify verify``
recomputes the same failure from the bundle.

One smoke point (tests/fixtures/certify/one_point.toml: gpt3_125M, 1 process, 12 steps, the
minimum of 3 repeats), real training through the PyTorch plugin; the vendor is passed to the
CLI's plugin manager as a vendor package's entry point would add it.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from harness.cli.main import build_app
from harness.app import Harness
from tests.harness.tampering_vendors import HalfLayersVendor

pytestmark = pytest.mark.slow

ONE_POINT = Path(__file__).resolve().parents[2] / "fixtures" / "certify" / "one_point.toml"
# The launch check's reason: the wrapper, the file, the key with its value written and found.
HALVED = "the halfco vendor's run wrapper changed config.json (params.num_layers 2 -> 1)"


def test_halved_layers_fail_certification_naming_num_layers(tmp_path):
    app = build_app(Harness.load(load_entrypoints=False, extra=(HalfLayersVendor(),)))
    run = CliRunner().invoke(app, ["certify", "run", "--vendor", "halfco", "--suite", str(ONE_POINT),
                                   "--output", str(tmp_path)])
    assert run.exit_code == 1, run.output
    bundle = Path(run.stdout.strip().splitlines()[-1])
    assert any(line.startswith("FAIL read_back") and HALVED in line for line in run.stdout.splitlines())
    assert any(line.startswith("FAIL repeats") and "3 of 3 repeats failed" in line and HALVED in line
               for line in run.stdout.splitlines())

    folder = bundle.parent / bundle.name.removesuffix(".tar.gz")
    cert = json.loads((folder / "certification.json").read_text())
    assert cert["passed"] is False and len(cert["points"][0]["run_ids"]) == 3
    [read_back] = [c for c in cert["checks"] if c["name"] == "read_back"]
    assert read_back["passed"] is False
    assert read_back["reason"].count(HALVED) == 3, read_back["reason"]  # every repeat, by run id
    assert html.escape(HALVED, quote=False) in (folder / "report.md").read_text()  # '>' as '&gt;' 

    # Nothing of the cheat trained, and the run folders keep the config their results record.
    for run_id in cert["points"][0]["run_ids"]:
        assert not (folder / "runs" / run_id / "train.log").exists()
        config = json.loads((folder / "runs" / run_id / "config.json").read_text())
        assert config["params"]["num_layers"] == 2

    # The verifier re-reads the results in the bundle and reaches the same failure; the bundle
    # itself is intact (the claim of failure is honest).
    verify = CliRunner().invoke(app, ["certify", "verify", str(bundle)])
    assert verify.exit_code == 1, verify.output
    lines = verify.stdout.splitlines()
    assert lines[0].startswith("integrity: unsigned: manifest intact") and not any(line.startswith("claim:") for line in lines)
    assert any(line.startswith("FAIL read_back") and HALVED in line for line in lines)
