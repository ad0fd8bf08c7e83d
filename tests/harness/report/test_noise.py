"""Noise flags: repeats, or a single repeat's step times; super-linear scaling."""

from __future__ import annotations

from harness.report.build import ReportBuilder
from harness.report.data import load_runs
from harness.report.noise import is_noisy, is_superlinear, run_noise
from tests.harness.report.factory import make_result, record


def test_a_single_repeat_with_a_high_step_cv_is_noisy():
    steady, shaky = make_result("steady", step_cv=0.01), make_result("shaky", step_cv=0.52)
    assert run_noise(shaky).source == "steps"
    assert not is_noisy(steady) and is_noisy(shaky)  # a 52% step CV no longer goes unflagged
    assert not is_noisy(shaky, threshold=0.6)
    # with repeats, their spread decides, not the step CV
    repeated = make_result("rep", value=100.0, repeats=[100.0, 100.5, 99.5], step_cv=0.52)
    assert run_noise(repeated).source == "repeats" and not is_noisy(repeated)


def test_superlinear_scaling_is_flagged(tmp_path):
    assert is_superlinear(1.06) and not is_superlinear(1.05) and not is_superlinear(0.8)
    root = tmp_path / "results"
    record(root, make_result("one", value=100.0, nproc=1))
    record(root, make_result("two", value=269.0, nproc=2, minutes=1))
    doc = ReportBuilder(load_runs(root)).build()
    [efficiency] = [b for s in doc.sections for b in s.blocks if getattr(b, "kind", "") == "efficiency"]
    cells = {row[0].text: row[1] for row in efficiency.rows}
    assert cells["2"].text == "134%" and cells["2"].badge == "suspicious"
    assert cells["1"].badge is None
    summary = doc.sections[0].blocks[0].text
    assert "total work" in summary and "mean of the per-step throughputs" in summary
