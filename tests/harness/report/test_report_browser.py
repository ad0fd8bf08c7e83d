"""report.html in real headless Chromium: tables and charts in the DOM, charts drawn (pixels)."""

from __future__ import annotations

import pytest

from harness.plugin_manager import make_plugin_manager
from harness.registry import Registry
from harness.report import generate_report
from tests.harness.report.browser import chromium_binary, ink_fraction, render_report

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
    assert {"scaling", "batch", "steps"} <= kinds
    for rect in rendered.rects:
        assert rect["w"] > 300 and rect["h"] > 200, rect
        assert rect["y"] + rect["h"] <= rendered.image.height, ("chart outside the screenshot", rect)
        ink, colours = ink_fraction(rendered.image, rect)
        # axes, grid, text and lines: a drawn chart inks several percent of its area,
        # and its series are in colour (a blank or failed SVG is white or grey only)
        assert ink > 0.03, (rect["id"], ink)
        assert colours, (rect["id"], "no coloured pixels")


def test_report_renders_in_chromium(results, tmp_path):
    registry = Registry.from_plugins(make_plugin_manager(load_entrypoints=False))
    written = generate_report(results, tmp_path / "report", registry=registry)
    rendered = render_report(written.html, tmp_path, "report-synthetic.png")
    check_rendered(rendered, min_charts=11)
    assert rendered.dom.count('class="badge noisy"') >= 2  # speed table and noise table
    assert '<table class="layout">' in rendered.dom and "DP_1x1x1_2_1536x16" in rendered.dom
    # the page background around the report is not white: the screenshot is not blank either
    assert rendered.image.pixel(5, rendered.image.height // 2) != (255, 255, 255)
