"""``certify reference``: real reference runs of one smoke point, the band written from them."""

from __future__ import annotations

import json

import pytest

from harness.certify.reference import record_references
from harness.certify.runner import CertifyObserver
from harness.certify.suite import Suite, parse_suite_text

pytest.importorskip("torch")
pytestmark = pytest.mark.slow

SUITE = """
[suite]
name = "ref"
kind = "smoke"
scale = "smoke"
repeats = 3
max_steps = 6
skip_steps = 2
cv_bound = 0.35
checkpoints = [3, 6]
checkpoint_window = 2

[[point]]
case = "gpt3_125M"
nproc = [1]
"""


def test_one_run_per_seed_the_suites_own_among_them(tmp_path, harness):
    progress = []

    class Progress(CertifyObserver):
        def point(self, label, repeat, repeats, index, total):
            progress.append((label, repeat, repeats, index, total))

    suite = Suite(spec=parse_suite_text(SUITE, "t"), text=SUITE, source="test")
    # Seed 1234 is the suite's own (the locked seed): asked for again, it runs once.
    [written] = record_references(harness, suite, "cpu", [1, 2, 1234], tmp_path / "work",
                                  folder=tmp_path / "bands", observer=Progress(), env_mode="current")
    assert progress == [("gpt3_125M-pytorch-1x1 seed 1", 1, 3, 1, 3),
                        ("gpt3_125M-pytorch-1x1 seed 2", 2, 3, 2, 3),
                        ("gpt3_125M-pytorch-1x1 seed 1234", 3, 3, 3, 3)]
    band = json.loads(written.read_text())
    assert written.name == "gpt3_125M-smoke-pytorch-fp32-gbs8-steps6.json"
    assert band["seeds"] == [1, 2, 1234] and band["center_seed"] == 1234
    assert [b["step"] for b in band["bands"]] == [3, 6]
    for checkpoint in band["bands"]:
        # Real runs on different seeds and data orders: their losses differ, the band is
        # centred on their mean and holds them all.
        assert len(set(checkpoint["values"])) == 3
        assert checkpoint["mean"] == pytest.approx(sum(checkpoint["values"]) / 3)
        assert checkpoint["low"] < min(checkpoint["values"]) <= max(checkpoint["values"]) < checkpoint["high"]


def test_an_unhealthy_reference_run_records_no_band(tmp_path, harness):
    """GPT-3 125M at 100 times its smoke rate diverges: the first reference run is refused, and
    no band file is written."""
    from harness.errors import HarnessError

    text = SUITE.replace('nproc = [1]', 'nproc = [1]\nset = { learning_rate = 0.2 }')
    suite = Suite(spec=parse_suite_text(text, "t"), text=text, source="test")
    with pytest.raises(HarnessError, match=r"seed 1\) trained unhealthily: "):
        record_references(harness, suite, "cpu", [1, 2], tmp_path / "work", folder=tmp_path / "bands",
                          env_mode="current")
    assert not (tmp_path / "bands").exists()
