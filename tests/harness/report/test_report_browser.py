"""report.html in real headless Chromium: tables and charts in the DOM, charts drawn (pixels)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from harness.app import Harness
from harness.models import BenchmarkResult
from harness.report.build import fmt_value
from harness.store import ResultStore
from harness.report import generate_report
from tests.harness.report.browser import (chromium_binary, ink_fraction, label_collisions,
                                         render_report)
from tests.harness.report.conftest import QUIET, megatron_lines, step_log
from tests.harness.report.factory import make_result, record

pytestmark = pytest.mark.skipif(
    chromium_binary() is None,
    reason="headless Chromium not installed (Debian package `chromium`, binary /usr/bin/chromium)")


def check_rendered(rendered, *, min_charts: int) -> None:
    """Shared by this test and the end-to-end sweep test."""
    dom = rendered.dom
    assert dom.count('<table class="speed">') >= 1 and dom.count('<table class="memory">') >= 1
    assert '<table class="runs">' in dom and 'id="environment"' in dom
    assert len(rendered.rects) >= min_charts
    kinds = {rect["id"].split("-")[0] for rect in rendered.rects}
    assert {"scaling", "batch", "steps", "loss"} <= kinds
    # every loss chart draws a line, and no chart label covers a line, a marker or a label
    loss = [parts for chart, parts in rendered.geometry.items() if chart.startswith("loss-")]
    assert loss and all(parts["lines"] for parts in loss)
    assert label_collisions(rendered.geometry) == []
    for rect in rendered.rects:
        assert rect["w"] > 300 and rect["h"] > 200, rect
        assert rect["y"] + rect["h"] <= rendered.image.height, ("chart outside the screenshot", rect)
        ink, colours = ink_fraction(rendered.image, rect)
        # axes, grid, text and lines: a drawn chart inks several percent of its area,
        # and its series are in colour (a blank or failed SVG is white or grey only)
        assert ink > 0.03, (rect["id"], ink)
        assert colours, (rect["id"], "no coloured pixels")


def test_report_renders_in_chromium(results, tmp_path):
    registry = Harness.load(load_entrypoints=False).registry
    written = generate_report(results, tmp_path / "report", registry=registry)
    rendered = render_report(written.html, tmp_path, "report-synthetic.png")
    check_rendered(rendered, min_charts=11)
    assert rendered.dom.count('class="badge noisy"') >= 2  # speed table and noise table
    assert '<table class="layout">' in rendered.dom and "DP_1x1x1_2_1536x16" in rendered.dom
    # the page background around the report is not white: the screenshot is not blank either
    assert rendered.image.pixel(5, rendered.image.height // 2) != (255, 255, 255)


def test_crowded_labels_do_not_overlap_and_history_renders(tmp_path):
    """Two columns that scale almost alike put their efficiency labels at the same spot (the
    "269%"/"80%" collision at x=2), a third scales super-linearly; a config recorded three
    times with a slowdown makes a history chart with a regression label."""
    root = tmp_path / "results"
    values = {("fp32", 4): (1000.0, 1600.0), ("fp32", 8): (990.0, 1590.0), ("bf16", 4): (500.0, 2690.0)}
    for index, ((precision, batch), (one, two)) in enumerate(values.items()):
        for nproc, value in ((1, one), (2, two)):
            steps = [value * f for f in (0.3, 0.6, 0.9, 0.95, 0.97)] + [value * f for f in (1.0, 1.04, 0.96) * 5]
            record(root, make_result(f"crowd-{precision}-{batch}-{nproc}", value=value, nproc=nproc,
                                     precision=precision, batch=batch, minutes=index),
                   log_lines=megatron_lines(steps, batch * nproc))
    for index, value in enumerate((1000.0, 1005.0, 800.0)):  # the third run is 20% slower
        record(root, make_result(f"hist-{index}", value=value, batch=16, minutes=100 + index * 60,
                                 step_cv=0.01), log_lines=step_log(value, QUIET, 16))
    registry = Harness.load(load_entrypoints=False).registry
    from harness.report.build import ReportOptions

    written = generate_report(root, tmp_path / "report", registry=registry,
                              options=ReportOptions(history=True))
    rendered = render_report(written.html, tmp_path, "report-crowded-labels.png")
    scaling = rendered.geometry["scaling-gpt3-125m-pytorch"]
    assert sorted(label["text"] for label in scaling["labels"]) == ["269%", "80%", "80%"]
    assert label_collisions(rendered.geometry) == []
    assert 'class="badge suspicious"' in rendered.dom  # 269% efficiency
    history = [chart for chart in rendered.geometry if chart.startswith("history-")]
    assert len(history) == 1
    assert [label["text"] for label in rendered.geometry[history[0]]["labels"]] == ["-20%"]
    assert '<table class="regressions">' in rendered.dom and "hist-2" in rendered.dom


NOISY_RUN = Path(__file__).parent / "data" / "noisy_cpu_run"


def test_reference_labels_cover_no_line_on_a_real_noisy_run(tmp_path):
    """A real 100-step CPU run whose steps scatter around their mean (recorded as it ran: its
    result.json and train.log): no spot near the dashed FINAL_RESULT line is free of the data
    line, so its label goes to the legend instead of over the lines. Its chart is checked
    against the data line and the dashed line as Chromium laid them out."""
    root = tmp_path / "results"
    result = BenchmarkResult.model_validate_json((NOISY_RUN / "result.json").read_text())
    run_dir = root / result.run_id
    run_dir.mkdir(parents=True)
    shutil.copyfile(NOISY_RUN / "train.log", run_dir / "train.log")
    ResultStore(root).add(result, run_dir)
    written = generate_report(root, tmp_path / "report", registry=Harness.load(load_entrypoints=False).registry)
    rendered = render_report(written.html, tmp_path, "report-noisy-run.png")
    [chart] = [chart for chart in rendered.geometry if chart.startswith("steps-")]
    parts = rendered.geometry[chart]
    assert len(parts["lines"]) == 2  # the data line and the dashed FINAL_RESULT line
    assert label_collisions(rendered.geometry) == []
    label = f"FINAL_RESULT {fmt_value(result.throughput.value)}"
    svg = rendered.dom.split(f'id="{chart}"')[1].split("</svg>")[0]
    assert svg.count(label) == 1  # next to its line where free, else in the legend
    if label not in [b["text"] for b in parts["labels"]]:
        assert 'stroke-dasharray="5 4"' in svg  # the legend's dashed swatch



def test_a_reference_label_with_no_free_spot_is_not_drawn_over_the_lines(tmp_path):
    """A run whose step throughput swings across the whole chart every step leaves no free
    spot near the dashed FINAL_RESULT line: its label goes to the legend, not over the data
    line and the dashed line (as a forced placement drew it)."""
    root = tmp_path / "results"
    values = [100.0 if step % 2 else 1900.0 for step in range(1, 101)]
    result = make_result("swinging", value=1000.0, batch=8)
    record(root, result, log_lines=megatron_lines(values, 8))
    written = generate_report(root, tmp_path / "report", registry=Harness.load(load_entrypoints=False).registry)
    rendered = render_report(written.html, tmp_path, "report-swinging-run.png")
    assert label_collisions(rendered.geometry) == []
    [chart] = [chart for chart in rendered.geometry if chart.startswith("steps-")]
    assert "FINAL_RESULT 1,000.0" not in [b["text"] for b in rendered.geometry[chart]["labels"]]
    svg = rendered.dom.split(f'id="{chart}"')[1].split("</svg>")[0]
    assert svg.count("FINAL_RESULT 1,000.0") == 1  # a dashed legend entry
