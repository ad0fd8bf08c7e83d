"""The report as a renderer-neutral document: sections of paragraphs, tables and charts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union


@dataclass
class Cell:
    text: str
    numeric: bool = False
    badge: str | None = None  # e.g. "noisy", "failed": a highlighted tag after the text
    title: str | None = None  # hover text (HTML) / footnote material


@dataclass
class Table:
    caption: str
    headers: list[str]
    rows: list[list[Cell]]
    note: str = ""
    kind: str = "data"  # speed | memory | layout | env | runs: a CSS hook and a test anchor


@dataclass
class Chart:
    chart_id: str
    title: str
    svg: str
    caption: str = ""
    kind: str = "chart"  # scaling | batch | steps


@dataclass
class Paragraph:
    text: str


Block = Union[Table, Chart, Paragraph]


@dataclass
class Section:
    section_id: str
    title: str
    blocks: list[Block] = field(default_factory=list)
    level: int = 2


@dataclass
class Document:
    title: str
    subtitle: str
    sections: list[Section] = field(default_factory=list)
