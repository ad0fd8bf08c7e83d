"""Streaming a log through a parser into a compact summary.

Lines are read one at a time and never kept. Per step only two floats are kept (throughput
and step time, in ``array('d')``: 16 bytes a step, ~16 MB for a million logged steps, needed
for medians, percentiles and trimming); loss and learning-rate curves are thinned to at most
``CURVE_POINTS`` points by doubling their stride, so they stay bounded however long the log.
"""

from __future__ import annotations

import hashlib
import io
import math
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from harness.logformat import LogFormat, LogParser
from harness.logparse.metadata import SNIFF_LINES, MetadataSniffer
from harness.models import ParsedLog, StepRecord

CURVE_POINTS = 512


@dataclass
class Curve:
    """(step, value) pairs thinned to a bounded size: every ``stride``-th point is kept."""

    points: list[tuple[int, float]] = field(default_factory=list)
    stride: int = 1
    seen: int = 0
    first: float | None = None
    last: float | None = None
    #: Values that were NaN or infinite, counted over every value (the thinned points may
    #: not hold them).
    non_finite: int = 0

    def add(self, step: int, value: float) -> None:
        if self.first is None:
            self.first = value
        self.last = value
        if not math.isfinite(value):
            self.non_finite += 1
        if self.seen % self.stride == 0:
            self.points.append((step, value))
            if len(self.points) >= CURVE_POINTS:
                self.points = self.points[::2]
                self.stride *= 2
        self.seen += 1


@dataclass
class StepSummary:
    """Everything aggregation and the result need, without the step objects."""

    throughput: array = field(default_factory=lambda: array("d"))
    #: The iteration each throughput record ends at, aligned with ``throughput`` (warm-up is
    #: counted in iterations, not records).
    throughput_steps: array = field(default_factory=lambda: array("q"))
    step_time: array = field(default_factory=lambda: array("d"))
    loss: Curve = field(default_factory=Curve)
    learning_rate: Curve = field(default_factory=Curve)
    count: int = 0
    first_step: int | None = None
    last_step: int | None = None
    samples: int | None = None
    memory_bytes: int | None = None

    def add(self, step: StepRecord) -> None:
        self.add_values(step.step, step.step_time_s, step.throughput, step.samples, step.loss,
                        step.learning_rate, step.memory_bytes)

    def add_values(self, step: int, step_time_s: float | None = None, throughput: float | None = None,
                   samples: int | None = None, loss: float | None = None,
                   learning_rate: float | None = None, memory_bytes: int | None = None) -> None:
        """The fields of one StepRecord; parsers given this as ``step_sink`` call it directly,
        which spares building a model object per step in multi-gigabyte logs."""
        self.count += 1
        if self.first_step is None:
            self.first_step = step
        self.last_step = step
        if throughput is not None and math.isfinite(throughput):
            self.throughput.append(throughput)
            self.throughput_steps.append(step)
        if step_time_s is not None:
            self.step_time.append(step_time_s)
        if loss is not None:
            self.loss.add(step, loss)
        if learning_rate is not None:
            self.learning_rate.add(step, learning_rate)
        if samples is not None:
            self.samples = samples
        if memory_bytes is not None:
            self.memory_bytes = max(self.memory_bytes or 0, memory_bytes)


@dataclass
class LogReading:
    """What a log gave: the parser's findings and the step summary (what a result is built from)."""

    parsed: ParsedLog  # the parser's finish(), its step list emptied
    summary: StepSummary
    lines: int | None  # lines read; None when a plugin parsed the log itself


def reading_of(parsed: ParsedLog) -> LogReading:
    """A ParsedLog that carries its steps (a plugin's ``parse_log``) as a LogReading."""
    summary = StepSummary()
    for step in parsed.steps:
        summary.add(step)
    return LogReading(parsed=parsed.model_copy(update={"steps": []}), summary=summary, lines=None)


@dataclass
class StreamedLog(LogReading):
    bytes: int
    sha256: str
    recognised: bool  # some line is characteristic of the format (or gave a step)
    #: The file does not end in a newline: it was cut in the middle of a line.
    cut_mid_line: bool = False
    #: Facts stated in the log's own text (world size, precision, ...), with their lines.
    stated: dict = field(default_factory=dict)


#: The longest line a log parser sees; the rest of a longer line is read in chunks of this
#: size and dropped, so a file without newlines is never held in memory whole.
MAX_LINE_CHARS = 64 * 1024


def bounded_lines(handle: io.TextIOBase, limit: int = MAX_LINE_CHARS) -> Iterator[str]:
    """Every line of ``handle``, each at most ``limit`` characters (a longer one is cut and
    ends with a newline, as if it had ended there)."""
    readline = handle.readline
    while True:
        line = readline(limit)
        if not line:
            return
        if len(line) == limit and not line.endswith(("\n", "\r")):
            while True:  # drop the rest of the line, a chunk at a time
                rest = readline(limit)
                if not rest or rest.endswith(("\n", "\r")):
                    break
            line += "\n"
        yield line


class _HashingReader(io.RawIOBase):
    """A binary file that feeds every byte it reads to a sha256 (one pass for both)."""

    def __init__(self, raw):
        self.raw = raw
        self.digest = hashlib.sha256()
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = self.raw.readinto(buffer)
        if count:
            self.digest.update(memoryview(buffer)[:count])
            self.size += count
        return count or 0


def stream_log(path: Path, fmt: LogFormat, **hints) -> StreamedLog:
    """Feed every line of ``path`` to a fresh parser of ``fmt``, keeping only the summary.

    Newlines are universal (``\r`` ends a line too, so tqdm redraws become lines of their
    own); undecodable bytes are replaced; the file's sha256 is computed in the same pass.
    """
    summary = StepSummary()
    # Parsers that know the ``step_sink`` hint report steps through it (and return None from
    # feed); others ignore it and return StepRecords. Either way each step is counted once.
    parser: LogParser = fmt.new_parser(keep_steps=False, step_sink=summary.add_values, **hints)
    add = summary.add
    feed = parser.feed
    detect = fmt.detect
    recognised = False
    lines = 0
    sniffer = MetadataSniffer()
    sniff = sniffer.feed
    last_line = ""
    with open(path, "rb", buffering=0) as raw:
        hashing = _HashingReader(raw)
        text = io.TextIOWrapper(io.BufferedReader(hashing, buffer_size=1 << 20),
                                encoding="utf-8", errors="replace")
        for line in bounded_lines(text):
            lines += 1
            if lines <= SNIFF_LINES:
                sniff(line, lines)
            last_line = line
            step = feed(line)
            if step is not None:
                add(step)
            # Until one line is characteristic of the format, ask the format about each line.
            if not recognised and detect(line):
                recognised = True
    parsed = parser.finish()
    if summary.count == 0 and parsed.steps:
        # A third-party parser that only reports steps in finish().
        for step in parsed.steps:
            summary.add(step)
    parsed = parsed.model_copy(update={"steps": []})
    return StreamedLog(parsed=parsed, summary=summary, lines=lines, bytes=hashing.size,
                       sha256=hashing.digest.hexdigest(), recognised=recognised or summary.count > 0,
                       cut_mid_line=bool(last_line) and not last_line.endswith(("\n", "\r")),
                       stated=sniffer.facts)
