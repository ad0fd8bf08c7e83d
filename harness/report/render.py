"""Render the report document as Markdown (charts as SVG files beside it) and as one
self-contained HTML file (inline CSS, inline SVG, no scripts, nothing fetched)."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from harness.report.document import Cell, Chart, Document, Paragraph, Section, Table
from harness.results_io import atomic_write_text

CSS = """
:root { --ink: #1f2937; --muted: #6b7280; --line: #e5e7eb; --card: #ffffff; --bg: #f3f4f6;
        --accent: #0072B2; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 14px/1.5 -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
header { background: #111827; color: #f9fafb; padding: 22px 32px 16px; }
header h1 { margin: 0 0 4px; font-size: 22px; font-weight: 650; }
header p { margin: 0; color: #d1d5db; }
nav { margin-top: 12px; display: flex; flex-wrap: wrap; gap: 6px 14px; }
nav a { color: #93c5fd; text-decoration: none; font-size: 13px; }
nav a:hover { text-decoration: underline; }
main { max-width: 1240px; margin: 0 auto; padding: 20px 24px 48px; }
section { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
          padding: 18px 22px; margin: 0 0 18px; box-shadow: 0 1px 2px rgba(0,0,0,.04); }
h2 { margin: 0 0 12px; font-size: 18px; }
h3 { margin: 18px 0 8px; font-size: 14px; color: #374151; }
p { margin: 6px 0 10px; }
.table-wrap { overflow-x: auto; margin: 4px 0 6px; }
table { border-collapse: collapse; font-size: 13px; min-width: 40%; }
th, td { border: 1px solid var(--line); padding: 5px 10px; text-align: left; vertical-align: top; }
th { background: #f9fafb; font-weight: 600; white-space: nowrap; }
tbody tr:nth-child(even) td { background: #fafafa; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td:first-child { font-weight: 600; }
table.runs td:first-child, table.noise td:first-child, table.failures td:first-child
  { font-weight: 400; font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; }
.note { color: var(--muted); font-size: 12px; margin: 2px 0 12px; }
.badge { display: inline-block; margin-left: 6px; padding: 0 6px; border-radius: 9px;
         font-size: 11px; font-weight: 600; line-height: 17px; }
.badge.noisy { background: #fef3c7; color: #92400e; border: 1px solid #fcd34d; }
.badge.failed { background: #fee2e2; color: #991b1b; border: 1px solid #fca5a5; }
.badge.modified { background: #e0e7ff; color: #3730a3; border: 1px solid #a5b4fc; }
.badge.suspicious { background: #ede9fe; color: #5b21b6; border: 1px solid #c4b5fd; }
.badge.regression { background: #fee2e2; color: #991b1b; border: 1px solid #fca5a5; }
.badge.unhealthy { background: #ffedd5; color: #9a3412; border: 1px solid #fdba74; }
.charts { display: flex; flex-wrap: wrap; gap: 14px; margin: 8px 0 12px; }
figure { margin: 0; border: 1px solid var(--line); border-radius: 8px; padding: 6px; background: #fff; }
figure svg { display: block; max-width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: 12px; padding: 2px 6px 0; width: 0; min-width: 100%; }
footer { color: var(--muted); font-size: 12px; text-align: center; padding: 0 0 24px; }
"""


# ---------------------------------------------------------------------------- HTML

def _html_cell(cell: Cell, tag: str = "td") -> str:
    classes = ' class="num"' if cell.numeric and tag == "td" else ""
    title = f' title="{escape(cell.title)}"' if cell.title else ""
    badge = ""
    if cell.badge and cell.badge != cell.text:
        badge = f'<span class="badge {escape(cell.badge)}">{escape(cell.badge)}</span>'
    text = escape(cell.text)
    if cell.badge and cell.badge == cell.text:
        text, badge = "", f'<span class="badge {escape(cell.badge)}">{escape(cell.badge)}</span>'
    return f"<{tag}{classes}{title}>{text}{badge}</{tag}>"


def _html_table(table: Table) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in table.headers)
    body = "\n".join("<tr>" + "".join(_html_cell(c) for c in row) + "</tr>" for row in table.rows)
    note = f'<p class="note">{escape(table.note)}</p>' if table.note else ""
    return (f'<h3>{escape(table.caption)}</h3><div class="table-wrap"><table class="{escape(table.kind)}">'
            f"<thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table></div>{note}")


def _html_chart(chart: Chart) -> str:
    caption = f"<figcaption>{escape(chart.caption)}</figcaption>" if chart.caption else ""
    return (f'<figure class="chart-figure {escape(chart.kind)}" data-chart="{escape(chart.chart_id)}">'
            f"{chart.svg}{caption}</figure>")


def _html_section(section: Section) -> str:
    parts = [f'<section id="{escape(section.section_id)}"><h2>{escape(section.title)}</h2>']
    charts: list[str] = []

    def flush() -> None:
        if charts:
            parts.append('<div class="charts">' + "\n".join(charts) + "</div>")
            charts.clear()

    for block in section.blocks:
        if isinstance(block, Chart):
            charts.append(_html_chart(block))
            continue
        flush()
        if isinstance(block, Table):
            parts.append(_html_table(block))
        elif isinstance(block, Paragraph):
            parts.append(f"<p>{escape(block.text)}</p>")
    flush()
    parts.append("</section>")
    return "\n".join(parts)


def render_html(doc: Document) -> str:
    nav = "".join(f'<a href="#{escape(s.section_id)}">{escape(s.title)}</a>' for s in doc.sections)
    body = "\n".join(_html_section(s) for s in doc.sections)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{escape(doc.title)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>{escape(doc.title)}</h1><p>{escape(doc.subtitle)}</p><nav>{nav}</nav></header>"
        f"<main>\n{body}\n</main><footer>{escape(doc.footer)}</footer></body></html>\n"
    )


# ---------------------------------------------------------------------------- Markdown

# Names, labels and failure reasons come from results and sweep files: in report.md they are
# text, as in report.html. HTML is escaped the way render_html escapes it (a Markdown viewer
# renders raw HTML), and the characters that would make Markdown of them (links, images,
# code, emphasis, table cells) are backslash-escaped.
_MD_SPECIAL = re.compile(r"([\\`*\[\]|])")


def _md_text(text: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", escape(text, quote=False)).replace("\r", " ").replace("\n", " ")


def _md_cell(cell: Cell) -> str:
    text = _md_text(cell.text)
    if cell.badge and cell.badge != cell.text:
        text = f"{text} ({cell.badge})" if text else cell.badge
    return text


def _md_table(table: Table) -> str:
    lines = [f"**{_md_text(table.caption)}**", "",
             "| " + " | ".join(_md_text(h) for h in table.headers) + " |",
             "|" + "|".join(":-----:" for _ in table.headers) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in table.rows]
    if table.note:
        lines += ["", f"> {_md_text(table.note)}"]
    return "\n".join(lines)


def render_markdown(doc: Document, chart_dir: str = "charts") -> str:
    out = [f"# {_md_text(doc.title)}", "", _md_text(doc.subtitle), ""]
    for section in doc.sections:
        out += [f"{'#' * section.level} {_md_text(section.title)}", ""]
        for block in section.blocks:
            if isinstance(block, Table):
                out += [_md_table(block), ""]
            elif isinstance(block, Chart):
                out += [f"![{_md_text(block.title)}]({chart_dir}/{block.chart_id}.svg)", ""]
                if block.caption:
                    out += [f"*{_md_text(block.caption)}*", ""]
            elif isinstance(block, Paragraph):
                out += [_md_text(block.text), ""]
    return "\n".join(out).rstrip() + "\n"


def write_report(doc: Document, out_dir: Path) -> dict[str, Path]:
    """Write report.md, report.html and charts/*.svg (for the Markdown) into ``out_dir``."""
    out_dir = Path(out_dir)
    chart_dir = out_dir / "charts"
    chart_dir.mkdir(parents=True, exist_ok=True)
    for stale in chart_dir.glob("*.svg"):
        stale.unlink()
    for section in doc.sections:
        for block in section.blocks:
            if isinstance(block, Chart):
                atomic_write_text(chart_dir / f"{block.chart_id}.svg", block.svg + "\n")
    paths = {"markdown": out_dir / "report.md", "html": out_dir / "report.html"}
    atomic_write_text(paths["markdown"], render_markdown(doc))
    atomic_write_text(paths["html"], render_html(doc))
    return paths
