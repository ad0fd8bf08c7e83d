"""report.html in real headless Chromium: tables and charts in the DOM, charts drawn (pixels)."""

from __future__ import annotations

import pytest

from harness.app import Harness
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
