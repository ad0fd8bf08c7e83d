"""History: every recorded run of a configuration over time, regressions beyond noise."""

from __future__ import annotations

from harness.report.build import ReportBuilder, ReportOptions
from harness.report.data import load_history, load_runs
from harness.report.history import history_section
from harness.app import Harness
from harness.report.steps import log_step_samples
from tests.harness.report.conftest import QUIET, step_log
from tests.harness.report.factory import make_result, record


def test_history_lists_regressions_beyond_noise(tmp_path):
    root = tmp_path / "results"
    # one configuration, four runs: steady, steady, 20% slower (beyond 1% noise), 2% faster
    for index, value in enumerate((1000.0, 1004.0, 803.0, 819.0)):
        result = make_result(f"h{index}", value=value, minutes=index * 60, step_cv=0.01)
        env = result.environment.model_copy(update={"harness_git_sha": f"{index}" + "a" * 39})
        record(root, result.model_copy(update={"environment": env}), log_lines=step_log(value, QUIET, 8))
    # another configuration recorded once: no history chart
    record(root, make_result("single", value=10.0, batch=2, minutes=300))
    assert len(load_runs(root)) == 2  # the same config hash: reports show the newest
    history = load_history(root)
    assert [r.result.run_id for r in history] == ["h0", "h1", "h2", "h3", "single"]
    # without per-step samples no slowdown is known to be beyond noise
    unknown = history_section(history, max_charts=10)
    [table] = [b for b in unknown.blocks if getattr(b, "kind", "") == "regressions"]
    assert table.rows == []
    section = history_section(history, max_charts=10, read_samples=log_step_samples(Harness.load().registry))
    charts = [b for b in section.blocks if getattr(b, "kind", "") == "history"]
    assert len(charts) == 1 and "-20%" in charts[0].svg
    [table] = [b for b in section.blocks if getattr(b, "kind", "") == "regressions"]
    assert [(row[1].text, row[2].text, row[5].text) for row in table.rows] == [("h1", "h2", "-20.0%")]
    assert "@ 1aaaaaaaaa → harness 0.1.0 @ 2aaaaaaaaa" in table.rows[0][7].text
    doc = ReportBuilder(load_runs(root), options=ReportOptions(history=True), history=history).build()
    assert any(s.section_id == "history" for s in doc.sections)
    assert not any(s.section_id == "history" for s in ReportBuilder(load_runs(root)).build().sections)
