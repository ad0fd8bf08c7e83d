"""Chart label placement: labels avoid data lines, markers and each other."""

from __future__ import annotations

from harness.report.svg import LabelPlacer, Series, line_chart, segment_hits_box, text_width


def test_segment_hits_box():
    box = (10.0, 10.0, 20.0, 20.0)
    assert segment_hits_box((0, 15), (30, 15), box)          # straight through
    assert segment_hits_box((15, 15), (16, 16), box)         # inside
    assert not segment_hits_box((0, 0), (30, 0), box)        # below
    assert not segment_hits_box((0, 30), (5, 40), box)       # elsewhere
    assert segment_hits_box((0, 0), (30, 30), box)           # diagonal through
    assert not segment_hits_box((0, 9), (9, 0), box, gap=0)  # corner missed


def test_placer_moves_a_label_off_a_line_and_off_another_label():
    placer = LabelPlacer(plot=(0, 0, 200, 100))
    placer.add_polyline([(0, 50), (200, 50)])
    first = placer.place("80%", 10.5, [(100, 52), (100, 40)])
    assert first[1] < first[3] <= 50  # above the line, not across it
    second = placer.place("80%", 10.5, [(100, 40), (100, 70)])
    assert second[1] > 50  # the first spot was taken: below the line
    assert placer.place("x" * 80, 10.5, [(0, 20)]) is None  # wider than the plot
    assert text_width("80%", 10.5) > 15


def test_point_labels_at_the_same_spot_are_separated():
    series = [Series("a", [(1.0, 1000.0), (2.0, 1600.0)], labels={2.0: "80%"}),
              Series("b", [(1.0, 990.0), (2.0, 1590.0)], labels={2.0: "80%"})]
    svg = line_chart(series, title="t", x_label="x", y_label="y", x_scale="log2")
    import re

    spots = re.findall(r'<text class="label" x="([\d.]+)" y="([\d.]+)"', svg)
    assert len(spots) == 2 and spots[0] != spots[1]
    assert abs(float(spots[0][1]) - float(spots[1][1])) > 10  # one above the other


def _label_boxes(svg: str) -> dict[str, tuple[float, float, float, float]]:
    """Each in-plot label's box as the placer reserved it (from its x and baseline)."""
    import re

    from harness.report.svg import text_width

    boxes = {}
    for x, y, size, text in re.findall(r'<text class="label" x="([\d.]+)" y="([\d.]+)" '
                                       r'font-size="([\d.]+)"[^>]*>([^<]*)</text>', svg):
        x, y, size = float(x), float(y), float(size)
        boxes[text] = (x, y - 0.8 * size, x + text_width(text, size), y + 0.22 * size)
    return boxes


def test_a_reference_label_never_covers_a_line_it_goes_to_the_legend_instead():
    """A series swinging across the whole plot every step leaves no free spot near the dashed
    FINAL_RESULT line: the label must not be forced over the lines; it becomes a dashed
    legend entry."""
    import re

    from harness.report.svg import HLine, Series, Shade, line_chart, segment_hits_box

    values = [100.0 if step % 2 else 1900.0 for step in range(1, 101)]
    points = [(float(step), value) for step, value in enumerate(values, start=1)]
    svg = line_chart([Series("step throughput", points, color="#0072B2", legend=False)],
                     title="t", x_label="step", y_label="tokens/s", width=520, height=300,
                     shades=[Shade(0.5, 5.5, "warm-up: 5 steps skipped")],
                     hlines=[HLine(1000.0, "FINAL_RESULT 1,000.0")])
    assert "FINAL_RESULT 1,000.0" not in _label_boxes(svg)
    assert svg.count("FINAL_RESULT 1,000.0") == 1
    legend = svg[svg.index('stroke-dasharray="5 4"'):]
    assert "FINAL_RESULT 1,000.0" in legend  # a dashed legend entry
    # and no in-plot label crosses the data line or the dashed line
    [polyline] = re.findall(r'<polyline class="series" points="([^"]+)"', svg)
    coords = [tuple(map(float, p.split(","))) for p in polyline.split()]
    [reference] = re.findall(r'<line class="reference" x1="([\d.]+)" x2="([\d.]+)" y1="([\d.]+)"', svg)
    x1, x2, y = map(float, reference)
    segments = list(zip(coords, coords[1:])) + [((x1, y), (x2, y))]
    for text, box in _label_boxes(svg).items():
        assert not any(segment_hits_box(p, q, box, gap=0.0) for p, q in segments), text
