"""Report contents from hand-made runs: tables, efficiency, noise, layouts, Markdown, HTML."""

from __future__ import annotations

import re

import pytest

from harness.cli.main import main
from harness.app import Harness
from harness.report import generate_report
from harness.report.build import ReportBuilder, ReportOptions, column_label, scaling_efficiency
from harness.report.data import ReportFilter, load_runs
from harness.report.document import Chart, Table
from harness.report.svg import Series, Shade, format_number, line_chart, nice_step
from harness.report.steps import log_step_reader


@pytest.fixture(scope="module")
def registry():
    return Harness.load(load_entrypoints=False).registry


def _tables(doc, kind):
    return [b for s in doc.sections for b in s.blocks if isinstance(b, Table) and b.kind == kind]


def _charts(doc, kind):
    return [b for s in doc.sections for b in s.blocks if isinstance(b, Chart) and b.kind == kind]


def test_seed_style_speed_and_memory_tables(results, registry):
    runs = load_runs(results)
    assert len(runs) == 8 + 2 + 1  # the older failed attempt is represented by its success
    doc = ReportBuilder(runs, step_reader=log_step_reader(registry)).build()
    [speed] = _tables(doc, "speed")
    assert speed.caption == "Speed (tokens/s)"
    assert speed.headers == ["processes", "FP32(BS=4)", "FP32(BS=8)", "FP32(BS=16)", "BF16(BS=4)",
                             "BF16(BS=8)"]
    rows = {row[0].text: [c.text for c in row[1:]] for row in speed.rows}
    assert rows == {"1": ["1,000.0", "1,200.0", "failed", "1,500.0", "1,800.0"],
                    "2": ["1,800.0", "2,280.0", "", "2,700.0", "3,240.0"]}
    noisy = [c for row in speed.rows for c in row if c.badge == "noisy"]
    assert len(noisy) == 1 and "CV 10.0% over 3 repeats" in noisy[0].title
    failed = [c for row in speed.rows for c in row if c.badge == "failed"]
    assert [c.text for c in failed] == ["failed"]  # the bs16 run
    [memory] = _tables(doc, "memory")
    assert [c.text for c in memory.rows[0][1:]] == ["512", "512", "", "512", "512"]
    [efficiency] = _tables(doc, "efficiency")
    # 1800 / (2 x 1000) = 90%, 2280 / 2400 = 95%, 2700 / 3000 = 90%, 3240 / 3600 = 90%
    assert [c.text for c in efficiency.rows[1][1:]] == ["90%", "95%", "", "90%", "90%"]


def test_layout_noise_failures_and_environment(results, registry):
    doc = ReportBuilder(load_runs(results), step_reader=log_step_reader(registry)).build()
    [layout] = _tables(doc, "layout")
    rows = [[c.text for c in row] for row in layout.rows]
    assert [(r[0], r[1], r[4], r[7], r[9]) for r in rows] == [
        ("DP", "DP_1x1x1_2_1536x16", "1 x 1 x 1", "464.00", "14,362"),
        ("MP", "MP_1x2x1_16_1536x16", "1 x 2 x 1", "692.00", "13,362")]
    [noise] = _tables(doc, "noise")
    flagged = [row for row in noise.rows if row[-1].text == "noisy"]
    assert len(flagged) == 1 and flagged[0][10].text == "10.0%"
    [failures] = _tables(doc, "failures")
    assert [row[0].text for row in failures.rows] == ["broken"]
    [runs_table] = _tables(doc, "runs")
    assert len(runs_table.rows) == 11
    attempts = {row[0].text: row[-1].text for row in runs_table.rows}
    assert attempts["run-0"] == "2"
    assert any("Test CPU" in c.text for t in _tables(doc, "env") for row in t.rows for c in row)


def test_charts_present_with_warmup_shading(results, registry):
    doc = ReportBuilder(load_runs(results), step_reader=log_step_reader(registry)).build()
    assert len(_charts(doc, "scaling")) == 1
    assert len(_charts(doc, "batch")) == 2  # one per process count
    steps = _charts(doc, "steps")
    assert len(steps) == 8  # every successful run with a log (the layout runs have none)
    svg = steps[0].svg
    assert 'class="shade"' in svg and "warm-up: 5 steps skipped" in svg
    assert len(re.findall(r'<circle class="point"', svg)) == 20
    assert "FINAL_RESULT" in svg
    # --max-step-charts caps them
    capped = ReportBuilder(load_runs(results), step_reader=log_step_reader(registry))
    capped.options.max_step_charts = 3
    assert len(_charts(capped.build(), "steps")) == 3


def test_filters(results):
    assert {r.result.framework for r in load_runs(results, ReportFilter(frameworks=["megatron"]))} == {"megatron"}
    assert len(load_runs(results, ReportFilter(sweeps=["grid"]))) == 8
    assert [r.result.run_id for r in load_runs(results, ReportFilter(run_ids=["layout-1"]))] == ["layout-1"]


def test_written_files_are_self_contained(results, registry, tmp_path):
    out = generate_report(results, tmp_path / "report", registry=registry)
    html = out.html.read_text()
    assert out.runs == 11
    assert "<script" not in html and "<link" not in html
    assert not re.search(r"(src|href)=\"https?:", html)
    assert re.findall(r"https?://[^\"' ]+", html) == ["http://www.w3.org/2000/svg"] * html.count("<svg")
    assert html.count("<svg") == 1 + 2 + 8 + 8  # scaling, batch, per-step throughput and loss
    md = out.markdown.read_text()
    assert "| processes | FP32(BS=4) | FP32(BS=8) | FP32(BS=16) | BF16(BS=4) | BF16(BS=8) |" in md
    assert "1,200.0 (noisy)" in md
    charts = sorted(p.name for p in (tmp_path / "report" / "charts").iterdir())
    assert len(charts) == 19 and all(f"charts/{name}" in md for name in charts)


def test_cli(results, tmp_path, capsys):
    assert main(["report", "--output", str(results), "--out", str(tmp_path / "r"), "--case", "gpt3_125M",
                 "--noise-threshold", "20"]) == 0
    assert "9 runs" in capsys.readouterr().out  # the 8 of the grid + the failed bs16 run
    assert "(noisy)" not in (tmp_path / "r" / "report.md").read_text()  # 10% < 20%
    assert main(["report", "--output", str(tmp_path / "nothing"), "--out", str(tmp_path / "r")]) == 2
    assert main(["report", "--output", str(results), "--out", str(tmp_path / "r"), "--since", "yesterday"]) == 2


def test_helpers():
    assert column_label("fp16", 64) == "FP16(BS=64)"
    assert scaling_efficiency({1: 100.0, 2: 180.0, 8: 640.0}) == {1: 1.0, 2: 0.9, 8: 0.8}
    assert scaling_efficiency({2: 100.0, 4: 150.0}) == {2: 1.0, 4: 0.75}
    assert nice_step(100) == 20 and nice_step(7) == 2 and nice_step(0) == 1
    assert format_number(1500) == "1,500" and format_number(25000) == "25k" and format_number(2.5e6) == "2.5M"
    svg = line_chart([Series("s", [(1, 10.0), (2, 20.0)])], title="t", x_label="x", y_label="y",
                     shades=[Shade(0.5, 1.5, "warm")])
    assert svg.startswith("<svg") and "<polyline" in svg and 'class="shade"' in svg


def test_mfu_shown_when_the_pipeline_computed_it():
    from harness.models.efficiency import Efficiency
    from harness.report.data import ReportRun
    from tests.harness.report.factory import make_result

    plain = make_result("gpu-run", vendor="nvidia")
    plain.efficiency = Efficiency(mfu=0.42)
    layout = make_result("layout-run", vendor="nvidia", case="DP_1x1x1_2_1536x16", framework="megatron")
    layout.efficiency = Efficiency(mfu=0.5)
    doc = ReportBuilder([ReportRun(plain, None), ReportRun(layout, None, {"sweep": "m", "group": "DP"})]).build()
    [mfu] = _tables(doc, "mfu")
    assert mfu.headers == ["GPUs", "FP32(BS=8)"] and mfu.rows[0][1].text == "42.0%"
    [table] = _tables(doc, "layout")
    assert table.headers[-1] == "MFU" and table.rows[0][-1].text == "50.0%"
    # CPU runs have no MFU: no table
    assert not _tables(ReportBuilder([ReportRun(make_result("cpu-run"), None)]).build(), "mfu")


def test_memory_prefers_the_device_monitor():
    from harness.report.data import ReportRun
    from tests.harness.report.factory import make_result

    result = make_result("gpu", vendor="nvidia", peak_memory_mib=700.0)
    result.device_metrics = {"nvml_peak_memory_bytes": [1024 ** 3, 2 * 1024 ** 3, None]}
    run = ReportRun(result, None)
    assert run.peak_memory == (2 * 1024 ** 3, "device monitor")
    [memory] = _tables(ReportBuilder([run]).build(), "memory")
    assert memory.rows[0][1].text == "2,048" and memory.rows[0][1].title == "source: device monitor"
    assert ReportRun(make_result("cpu"), None).peak_memory == (512 * 1024 * 1024, "framework")


HOSTILE = ['<script>alert(1)</script>', '<img src=x onerror=alert(2)>', '[click](javascript:alert(3))',
           '![x](http://evil.example/x.png)', '`code`|cell']


def test_markdown_keeps_no_raw_html_or_markdown_from_names_labels_and_reasons(tmp_path):
    from tests.harness.report.factory import make_result, record

    root = tmp_path / "results"
    ok = make_result("ok-1", case=HOSTILE[0], vendor=HOSTILE[1], framework=HOSTILE[2])
    failed = make_result("failed-1", status="failed", value=None, case=HOSTILE[0])
    failed = failed.model_copy(update={"failure_reason": " ".join(HOSTILE)})
    record(root, ok, sweep={"sweep": HOSTILE[3], "group": HOSTILE[2], "label": HOSTILE[4], "point": 1,
                             "points": 2})
    record(root, failed, sweep={"sweep": HOSTILE[3], "group": None, "label": HOSTILE[1], "point": 2,
                                 "points": 2})
    out = generate_report(root, tmp_path / "report", options=ReportOptions(title=HOSTILE[0]))
    md = out.markdown.read_text()
    assert "<script" not in md and "<img" not in md
    assert not re.search(r"(?<!\\)\]\(", md.replace("](charts/", "")), "a link or image"
    assert not re.search(r"(?<!\\)`", md.replace("`harness run`", "")), "a code span"
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in md and "\\[click\\]" in md
    html = out.html.read_text()
    assert "<script" not in html and "<img" not in html


def test_an_unhealthy_run_is_flagged_beside_its_figure_and_in_the_runs_table():
    from harness.health import judge_health
    from harness.report.data import ReportRun
    from tests.harness.report.factory import make_result

    sick, well = make_result("sick"), make_result("well", minutes=1, batch=16)
    sick.health = judge_health([(1, 11.0), (2, 30.0), (3, 10.0), (4, 9.0), (5, 8.0)], skip_steps=1)
    well.health = judge_health([(1, 11.0), (2, 10.0), (3, 9.5), (4, 9.0), (5, 8.0)], skip_steps=1)
    doc = ReportBuilder([ReportRun(sick, None), ReportRun(well, None)]).build()
    [speed] = _tables(doc, "speed")
    cells = {c.badge: c for row in speed.rows for c in row if c.badge}
    assert "unhealthy: loss 30 at step 2" in cells["unhealthy"].title
    [runs] = _tables(doc, "runs")
    status = {row[0].text: row[7] for row in runs.rows}
    assert status["sick"].badge == "unhealthy" and "loss 30 at step 2" in status["sick"].title
    assert status["well"].badge is None
