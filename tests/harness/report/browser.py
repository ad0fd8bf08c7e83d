"""Headless Chromium for report tests: DOM dump, screenshot, and a small PNG reader.

Chromium comes from Debian's ``chromium`` package (``/usr/bin/chromium``). The report has no
scripts; tests make a copy with one script that writes each chart's position into the DOM,
so the screenshot's chart areas can be found and checked pixel by pixel.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
ARTIFACTS = REPO / "test-artifacts"
WIDTH = 1280

_MEASURE = """<script>
document.addEventListener('DOMContentLoaded', function () {
  var rects = [];
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var r = svg.getBoundingClientRect();
    rects.push({id: svg.id, x: r.left + window.scrollX, y: r.top + window.scrollY,
                w: r.width, h: r.height});
  });
  document.body.setAttribute('data-chart-rects', JSON.stringify(rects));
  // chart labels (SVG units) with the data lines and markers they must not cover
  var geometry = {};
  document.querySelectorAll('svg.chart').forEach(function (svg) {
    var labels = [];
    svg.querySelectorAll('text.label').forEach(function (t) {
      var b = t.getBBox();
      labels.push({text: t.textContent, x: b.x, y: b.y, w: b.width, h: b.height});
    });
    var lines = [];
    svg.querySelectorAll('polyline.series').forEach(function (p) {
      lines.push(p.getAttribute('points'));
    });
    // reference lines (the dashed FINAL_RESULT mean) are lines a label must not cover too
    svg.querySelectorAll('line.reference').forEach(function (l) {
      lines.push(l.getAttribute('x1') + ',' + l.getAttribute('y1') + ' ' +
                 l.getAttribute('x2') + ',' + l.getAttribute('y2'));
    });
    var points = [];
    svg.querySelectorAll('circle.point').forEach(function (c) {
      points.push([parseFloat(c.getAttribute('cx')), parseFloat(c.getAttribute('cy'))]);
    });
    geometry[svg.id] = {labels: labels, lines: lines, points: points};
  });
  document.body.setAttribute('data-chart-geometry', JSON.stringify(geometry));
  document.body.setAttribute('data-page-height', String(document.documentElement.scrollHeight));
});
</script>"""


def chromium_binary() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _run(args: list[str], profile: Path, timeout: float = 90) -> subprocess.CompletedProcess:
    binary = chromium_binary()
    assert binary, "chromium not found"
    command = [binary, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--no-first-run", "--disable-extensions", "--force-device-scale-factor=1",
               f"--user-data-dir={profile}", *args]
    env = dict(os.environ, HOME=str(profile))
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)


def dump_dom(html: Path, profile: Path, height: int = 1000) -> str:
    result = _run(["--virtual-time-budget=5000", f"--window-size={WIDTH},{height}", "--dump-dom",
                   html.as_uri()], profile)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def screenshot(html: Path, png: Path, profile: Path, height: int) -> None:
    result = _run(["--virtual-time-budget=5000", f"--window-size={WIDTH},{height}",
                   f"--screenshot={png}", html.as_uri()], profile)
    assert result.returncode == 0 and png.is_file(), result.stderr[-2000:]


@dataclass
class Image:
    width: int
    height: int
    channels: int
    rows: list[bytes]

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        i = x * self.channels
        row = self.rows[y]
        return row[i], row[i + 1], row[i + 2]


def read_png(path: Path) -> Image:
    """Decode an 8-bit RGB or RGBA, non-interlaced PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", chunk)
        elif kind == b"IDAT":
            idat += chunk
        elif kind == b"IEND":
            break
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    channels = 3 if color == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows: list[bytes] = []
    previous = bytearray(stride)
    offset = 0
    for _ in range(height):
        kind = raw[offset]
        line = bytearray(raw[offset + 1:offset + 1 + stride])
        offset += 1 + stride
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            upper_left = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 0xFF
            elif kind == 2:
                line[i] = (line[i] + up) & 0xFF
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - upper_left
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - upper_left)
                predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else upper_left)
                line[i] = (line[i] + predictor) & 0xFF
        rows.append(bytes(line))
        previous = line
    return Image(width, height, channels, rows)


@dataclass
class RenderedReport:
    dom: str
    rects: list[dict]
    image: Image
    png: Path
    geometry: dict  # chart id -> {"labels": [bbox], "lines": [points attr of data and reference lines], "points": [[x, y]]}


def render_report(report_html: Path, workdir: Path, artifact_name: str) -> RenderedReport:
    """Open the report in headless Chromium: DOM, chart positions, full-page screenshot
    (also saved as ``test-artifacts/<artifact_name>``)."""
    probe = report_html.with_name("report.probe.html")
    probe.write_text(report_html.read_text(encoding="utf-8").replace("</body>", _MEASURE + "</body>"),
                     encoding="utf-8")
    profile = workdir / "chromium-profile"
    profile.mkdir(exist_ok=True)
    probed = dump_dom(probe, profile)
    rects = json.loads(_attribute(probed, "data-chart-rects"))
    geometry = json.loads(_attribute(probed, "data-chart-geometry"))
    height = min(int(float(_attribute(probed, "data-page-height"))) + 20, 16000)
    png = workdir / "report.png"
    screenshot(report_html, png, profile, height)
    ARTIFACTS.mkdir(exist_ok=True)
    shutil.copyfile(png, ARTIFACTS / artifact_name)
    return RenderedReport(dump_dom(report_html, profile), rects, read_png(png), png, geometry)


def _attribute(dom: str, name: str) -> str:
    import html
    import re

    match = re.search(rf'{name}="([^"]*)"', dom)
    assert match, f"{name} missing from the DOM: did the page load?"
    return html.unescape(match.group(1))


def ink_fraction(image: Image, rect: dict, inset: int = 2) -> tuple[float, set]:
    """Share of non-white pixels in a rectangle, and the set of strongly coloured pixels seen."""
    x0, y0 = int(rect["x"]) + inset, int(rect["y"]) + inset
    x1 = min(int(rect["x"] + rect["w"]) - inset, image.width)
    y1 = min(int(rect["y"] + rect["h"]) - inset, image.height)
    total = inked = 0
    colours = set()
    for y in range(y0, y1, 2):
        for x in range(x0, x1, 2):
            r, g, b = image.pixel(x, y)
            total += 1
            if min(r, g, b) < 235:
                inked += 1
            if max(r, g, b) - min(r, g, b) > 80:
                colours.add((r // 32, g // 32, b // 32))
    return (inked / total if total else 0.0), colours


def label_collisions(geometry: dict) -> list[str]:
    """Chart labels (as Chromium laid them out) that overlap another label, cross a data line
    or a reference line (the dashed FINAL_RESULT mean) or cover a marker; empty when every
    label sits in free space."""
    from harness.report.svg import segment_hits_box

    problems = []
    for chart, parts in geometry.items():
        boxes = [(b["text"], (b["x"], b["y"], b["x"] + b["w"], b["y"] + b["h"])) for b in parts["labels"]]
        for i, (text, box) in enumerate(boxes):
            for other_text, other in boxes[i + 1:]:
                if box[0] < other[2] and other[0] < box[2] and box[1] < other[3] and other[1] < box[3]:
                    problems.append(f"{chart}: {text!r} overlaps {other_text!r}")
            for points in parts["lines"]:
                coords = [tuple(map(float, p.split(","))) for p in points.split()]
                if any(segment_hits_box(p, q, box, gap=0.0) for p, q in zip(coords, coords[1:])):
                    problems.append(f"{chart}: {text!r} crosses a line")
                    break
            for x, y in parts["points"]:
                if box[0] - 3 < x < box[2] + 3 and box[1] - 3 < y < box[3] + 3:
                    problems.append(f"{chart}: {text!r} covers a marker")
                    break
    return problems
