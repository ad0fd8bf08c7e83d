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
