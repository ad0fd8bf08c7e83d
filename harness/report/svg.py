"""A small SVG line chart: axes, grid, series with markers, legend, shaded x-ranges.

Self-contained markup (no scripts, no external fonts), so a report opens offline. Hovering a
point shows its value through the SVG ``<title>`` element.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

# Okabe-Ito colours: distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]


@dataclass
class Series:
    name: str
    points: list[tuple[float, float]]
    color: str | None = None
    dashed: bool = False
    markers: bool = True
    labels: dict[float, str] = field(default_factory=dict, repr=False)  # x -> text by the point
    legend: bool = True


@dataclass
class Shade:
    x0: float
    x1: float
    label: str


@dataclass
class HLine:
    y: float
    label: str
    color: str = "#555555"


def nice_step(span: float, target_ticks: int = 5) -> float:
    """A 1-2-5 step that splits ``span`` into about ``target_ticks`` intervals."""
    if span <= 0:
        return 1.0
    raw = span / target_ticks
    magnitude = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * magnitude:
            return factor * magnitude
    return 10 * magnitude


def format_number(value: float) -> str:
    """Compact axis text: 1,234 / 12.5k / 3.2M."""
    magnitude = abs(value)
    if magnitude >= 1e6:
        return f"{value / 1e6:.3g}M"
    if magnitude >= 1e4:
        return f"{value / 1e3:.3g}k"
    if magnitude >= 100 or value == int(value):
        return f"{value:,.0f}"
    return f"{value:.3g}"


def format_tick(value: float, top: float) -> str:
    """Axis ticks share one style: thousands as k (or millions as M) once the axis reaches 10k."""
    if value == 0:
        return "0"
    if top >= 1e7:
        return f"{value / 1e6:g}M"
    if top >= 1e4:
        return f"{value / 1e3:g}k"
    return format_number(value)


def line_chart(
    series: list[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    x_scale: str = "linear",  # or "log2" for GPU counts and batch sizes
    x_ticks: list[float] | None = None,
    x_tick_labels: dict[float, str] | None = None,  # text under a tick instead of its number
    shades: list[Shade] = (),
    hlines: list[HLine] = (),
    width: int = 540,
    height: int = 340,
    chart_id: str = "chart",
    legend_extra: list[tuple[str, str, bool]] = (),  # (text, colour, dashed) legend-only entries
    y_from_data: bool = False,  # the y axis spans the data (loss curves) instead of starting at 0
) -> str:
    width_in, height_in = width, height
    entries = [(s.name, s.color or PALETTE[i % len(PALETTE)], s.dashed)
               for i, s in enumerate(series) if s.legend] + list(legend_extra)
    legend_rows = _legend_rows(entries, width)
    height += 16 * (len(legend_rows) - 1)
    bottom = 84 + 16 * (len(legend_rows) - 1) if entries else 46
    if not entries:
        height -= 84 - 46
    margin_left, margin_right, margin_top, margin_bottom = 64, 16, 40, bottom
    plot_w = width - margin_left - margin_right
    plot_h = height - margin_top - margin_bottom
    xs = [x for s in series for x, _ in s.points] + [v for s in shades for v in (s.x0, s.x1)]
    ys = [y for s in series for _, y in s.points] + [h.y for h in hlines]
    if not xs or not ys:
        xs, ys = [0.0, 1.0], [0.0, 1.0]

    def tx(x: float) -> float:
        return math.log2(x) if x_scale == "log2" and x > 0 else x

    x_min, x_max = min(tx(x) for x in xs), max(tx(x) for x in xs)
    if x_min == x_max:
        x_min, x_max = x_min - 1, x_max + 1
    pad = (x_max - x_min) * 0.04
    x_min, x_max = x_min - pad, x_max + pad
    y_bottom = 0.0
    if y_from_data and min(ys) < max(ys):
        span = max(ys) - min(ys)
        step = nice_step(span * 1.16)
        y_bottom = math.floor((min(ys) - span * 0.08) / step) * step
        y_top = math.ceil((max(ys) + span * 0.08) / step) * step
    else:
        y_top = max(ys) * 1.08 if max(ys) > 0 else 1.0
        step = nice_step(y_top)
        y_top = math.ceil(y_top / step) * step

    def px(x: float) -> float:
        return margin_left + (tx(x) - x_min) / (x_max - x_min) * plot_w

    def py(y: float) -> float:
        return margin_top + plot_h - ((y - y_bottom) / (y_top - y_bottom)) * plot_h

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" id="{escape(chart_id)}" '
           f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" role="img" '
           f'aria-label="{escape(title)}">',
           f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
           f'<text x="{margin_left}" y="22" class="chart-title" font-size="14" font-weight="600" '
           f'fill="#1f2937">{escape(title)}</text>']
    for shade in shades:
        x0, x1 = px(shade.x0), px(shade.x1)
        out.append(f'<rect class="shade" x="{x0:.1f}" y="{margin_top}" width="{max(x1 - x0, 1):.1f}" '
                   f'height="{plot_h}" fill="#f59e0b" fill-opacity="0.16"><title>{escape(shade.label)}'
                   f'</title></rect>')
    # y grid and labels
    value = y_bottom
    while value <= y_top + step / 2:
        y = py(value)
        out.append(f'<line x1="{margin_left}" x2="{margin_left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" '
                   f'stroke="#e5e7eb" stroke-width="1"/>')
        out.append(f'<text x="{margin_left - 6}" y="{y + 4:.1f}" font-size="11" fill="#4b5563" '
                   f'text-anchor="end">{format_tick(value, y_top)}</text>')
        value += step
    # x ticks
    ticks = x_ticks if x_ticks is not None else sorted({x for s in series for x, _ in s.points})
    if len(ticks) > 12:
        stride = math.ceil(len(ticks) / 12)
        ticks = ticks[::stride]
    for tick in ticks:
        x = px(tick)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{margin_top + plot_h}" '
                   f'y2="{margin_top + plot_h + 4}" stroke="#9ca3af"/>')
        out.append(f'<text x="{x:.1f}" y="{margin_top + plot_h + 17}" font-size="11" fill="#4b5563" '
                   f'text-anchor="middle">{escape((x_tick_labels or {}).get(tick, format_number(tick)))}</text>')
    out.append(f'<line x1="{margin_left}" x2="{margin_left + plot_w}" y1="{margin_top + plot_h}" '
               f'y2="{margin_top + plot_h}" stroke="#6b7280"/>')
    out.append(f'<line x1="{margin_left}" x2="{margin_left}" y1="{margin_top}" '
               f'y2="{margin_top + plot_h}" stroke="#6b7280"/>')
    out.append(f'<text x="{margin_left + plot_w / 2:.1f}" y="{margin_top + plot_h + 34}" font-size="12" '
               f'fill="#374151" text-anchor="middle">{escape(x_label)}</text>')
    out.append(f'<text transform="translate(14,{margin_top + plot_h / 2:.1f}) rotate(-90)" font-size="12" '
               f'fill="#374151" text-anchor="middle">{escape(y_label)}</text>')
    for line in hlines:
        y = py(line.y)
        out.append(f'<line class="reference" x1="{margin_left}" x2="{margin_left + plot_w}" '
                   f'y1="{y:.1f}" y2="{y:.1f}" stroke="{line.color}" stroke-width="1.2" '
                   f'stroke-dasharray="6 4"/>')
    # Labels go where they cover no data line, no marker and no other label.
    placer = LabelPlacer(plot=(margin_left, margin_top, margin_left + plot_w, margin_top + plot_h))
    for item in series:
        points = sorted(item.points)
        placer.add_polyline([(px(x), py(y)) for x, y in points])
        if item.markers:
            for x, y in points:
                placer.add_box(_box_around(px(x), py(y), 4.0))
    for shade in shades:
        x0 = px(shade.x0)
        placer.add_box((x0, margin_top, x0 + 0.1, margin_top + plot_h))  # the shade's edge
    labels: list[str] = []
    for shade in shades:
        x0, x1 = px(shade.x0), px(shade.x1)
        box = placer.place(shade.label, 11, [(x0 + 4, margin_top + 14), (x0 + 4, margin_top + plot_h - 6),
                                             (x0 + 4, margin_top + 30), (x0 + 4, margin_top + plot_h - 22)])
        if box:
            labels.append(_label_text(box, shade.label, 11, "#92400e"))
    # A reference line's label goes next to it where that is free of data lines, markers and
    # labels; where nothing near it is free (a noisy series all around the mean), it goes to
    # the legend, as a dashed entry, rather than over the lines.
    # The reference lines themselves are lines the other labels must not cover.
    for line in hlines:
        placer.add_polyline([(margin_left, py(line.y)), (margin_left + plot_w, py(line.y))])
    crowded = []
    for line in hlines:
        if not line.label:
            continue
        y = py(line.y)
        right, left = margin_left + plot_w - 4, margin_left + 4
        width = text_width(line.label, 11)
        spots = [(sx, y + dy) for dy in (-5, 14, -19, 28, -33, 42, -47, 56)
                 for sx in (right - width, left, (left + right - width) / 2)]
        box = placer.place(line.label, 11, spots)
        if box is None:
            crowded.append(line)
        else:
            labels.append(_label_text(box, line.label, 11, line.color))
    if crowded:
        return line_chart(
            series, title=title, x_label=x_label, y_label=y_label, x_scale=x_scale, x_ticks=x_ticks,
            x_tick_labels=x_tick_labels, shades=shades, width=width_in, height=height_in,
            hlines=[HLine(h.y, "" if h in crowded else h.label, h.color) for h in hlines],
            chart_id=chart_id, y_from_data=y_from_data,
            legend_extra=list(legend_extra) + [(h.label, h.color, True) for h in crowded])
    for index, item in enumerate(series):
        color = item.color or PALETTE[index % len(PALETTE)]
        points = sorted(item.points)
        if len(points) > 1:
            path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in points)
            dash = ' stroke-dasharray="5 4"' if item.dashed else ""
            out.append(f'<polyline class="series" points="{path}" fill="none" stroke="{color}" '
                       f'stroke-width="{1.4 if item.dashed else 2.2}"{dash}/>')
        if item.markers:
            for x, y in points:
                out.append(f'<circle class="point" cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.6" '
                           f'fill="{color}"><title>{escape(item.name)}: x={format_number(x)}, '
                           f'y={y:,.2f}</title></circle>')
                if x in item.labels:
                    text = item.labels[x]
                    width, cx, cy = text_width(text, 10.5), px(x), py(y)
                    spots = [(cx + 6, cy - 7), (cx + 6, cy + 15), (cx - 6 - width, cy - 7),
                             (cx - 6 - width, cy + 15), (cx - width / 2, cy - 9),
                             (cx - width / 2, cy + 18), (cx + 8, cy + 4), (cx - 8 - width, cy + 4)]
                    spots += [(sx, sy + dy) for dy in (-14, 14, -28, 28) for sx, sy in spots[:4]]
                    box = placer.place(text, 10.5, spots)
                    if box is not None:  # nowhere free: the hover title still has the value
                        labels.append(_label_text(box, text, 10.5, color))
    out.extend(labels)  # on top of the lines
    # legend below the plot, wrapping into rows
    legend_y = margin_top + plot_h + 54
    for row in legend_rows:
        for cursor, (name, color, dashed) in row:
            dash = ' stroke-dasharray="5 4"' if dashed else ""
            out.append(f'<line x1="{cursor}" x2="{cursor + 18}" y1="{legend_y - 4}" '
                       f'y2="{legend_y - 4}" stroke="{color}" stroke-width="2.5"{dash}/>')
            out.append(f'<text x="{cursor + 23}" y="{legend_y}" font-size="11" fill="#374151">'
                       f'{escape(name)}</text>')
        legend_y += 16
    out.append("</svg>")
    return "\n".join(out)


def _legend_rows(entries, width: int, left: int = 64, right: int = 16):
    """Place legend entries left to right, wrapping into rows: [[(x, entry), ...], ...]."""
    rows: list[list] = [[]]
    cursor = left
    for entry in entries:
        text_w = int(6.6 * len(entry[0])) + 34
        if cursor + text_w > width - right and rows[-1]:
            rows.append([])
            cursor = left
        rows[-1].append((cursor, entry))
        cursor += text_w
    return rows


Box = tuple[float, float, float, float]  # x0, y0, x1, y1 in SVG units


def text_width(text: str, font_size: float) -> float:
    """A generous estimate of rendered text width (sans-serif digits and letters are about
    0.55 em; 0.62 leaves room for wider fonts)."""
    return 0.62 * font_size * len(text)


def _box_around(x: float, y: float, r: float) -> Box:
    return (x - r, y - r, x + r, y + r)


def _label_text(box: Box, text: str, font_size: float, color: str) -> str:
    x0, _, _, y1 = box
    baseline = y1 - 0.22 * font_size  # the box reaches below the baseline for descenders
    return (f'<text class="label" x="{x0:.1f}" y="{baseline:.1f}" font-size="{font_size}" '
            f'fill="{color}">{escape(text)}</text>')


def _overlaps(a: Box, b: Box, gap: float = 1.5) -> bool:
    return a[0] < b[2] + gap and b[0] < a[2] + gap and a[1] < b[3] + gap and b[1] < a[3] + gap


def segment_hits_box(p: tuple[float, float], q: tuple[float, float], box: Box, gap: float = 1.5) -> bool:
    """Whether the segment p-q passes through ``box`` grown by ``gap`` (Liang-Barsky clipping)."""
    x0, y0, x1, y1 = box[0] - gap, box[1] - gap, box[2] + gap, box[3] + gap
    dx, dy = q[0] - p[0], q[1] - p[1]
    low, high = 0.0, 1.0
    for edge_p, edge_q in ((-dx, p[0] - x0), (dx, x1 - p[0]), (-dy, p[1] - y0), (dy, y1 - p[1])):
        if edge_p == 0:
            if edge_q < 0:
                return False
            continue
        t = edge_q / edge_p
        if edge_p < 0:
            low = max(low, t)
        else:
            high = min(high, t)
        if low > high:
            return False
    return True


@dataclass
class LabelPlacer:
    """Places text labels inside the plot area where they cover no line, marker or label."""

    plot: Box
    boxes: list[Box] = field(default_factory=list)
    segments: list[tuple[tuple[float, float], tuple[float, float]]] = field(default_factory=list)

    def add_polyline(self, points: list[tuple[float, float]]) -> None:
        self.segments.extend(zip(points, points[1:]))

    def add_box(self, box: Box) -> None:
        self.boxes.append(box)

    def free(self, box: Box) -> bool:
        x0, y0, x1, y1 = self.plot
        if box[0] < x0 or box[1] < y0 or box[2] > x1 or box[3] > y1:
            return False
        if any(_overlaps(box, other) for other in self.boxes):
            return False
        return not any(segment_hits_box(p, q, box) for p, q in self.segments)

    def place(self, text: str, font_size: float, spots: list[tuple[float, float]],
              force: bool = False) -> Box | None:
        """The first spot (left x, baseline y) whose text box is free; it is then taken.
        ``force`` takes the first spot inside the plot when none is free."""
        width = text_width(text, font_size)
        for x, baseline in spots:
            box = (x, baseline - 0.8 * font_size, x + width, baseline + 0.22 * font_size)
            if self.free(box) or (force and self._inside(box)):
                self.boxes.append(box)
                return box
        if force:
            x, baseline = spots[0]
            box = (x, baseline - 0.8 * font_size, x + width, baseline + 0.22 * font_size)
            self.boxes.append(box)
            return box
        return None

    def _inside(self, box: Box) -> bool:
        x0, y0, x1, y1 = self.plot
        return box[0] >= x0 and box[1] >= y0 and box[2] <= x1 and box[3] <= y1
