"""The certification report renders in headless Chromium: checks, scores, loss chart drawn."""

from __future__ import annotations

import pytest

from tests.harness.certify.fixture_bundle import unpack
from tests.harness.report.browser import chromium_binary, ink_fraction, render_report

pytestmark = pytest.mark.skipif(
    chromium_binary() is None,
    reason="headless Chromium not installed (Debian package `chromium`, binary /usr/bin/chromium)")


def test_certification_report_renders(tmp_path, registry):
    from harness.certify.evaluate import evaluate
    from harness.certify.report import write_certification_report

    folder = unpack(tmp_path)
    # Rebuilt from the bundle's files.
    written = write_certification_report(folder, evaluate(folder, registry).evidence)
    assert (folder / "report.md").read_text().startswith("# Certification PASSED")
    rendered = render_report(written["html"], tmp_path, "certification-report.png")
    dom = rendered.dom
    assert '<table class="checks">' in dom and '<table class="scores">' in dom
    assert dom.count("<td>convergence</td>") == 1 and 'class="badge failed"' not in dom
    assert "System description" in dom and ("Intel" in dom or "cpu" in dom)
    loss = [r for r in rendered.rects if r["id"].startswith("loss-")]
    assert len(loss) == 1
    ink, colours = ink_fraction(rendered.image, loss[0])
    assert ink > 0.03 and colours
