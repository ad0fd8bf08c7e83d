"""Shared machinery for line-by-line log parsers: step recording, failure markers, units.

Every format's parser derives from :class:`RecordingParser`, so they all report failures,
memory and per-device versus total throughput the same way. Parsers stay cheap per line:
a format tests a literal substring before it runs any regex.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from harness.logformat import LogParser
from harness.logparse.peak_memory import peak_memory_bytes
from harness.models import ParsedLog, StepRecord

#: ``meta["throughput_scope"]``: whether step throughput is for one device or the whole job.
PER_DEVICE = "per_device"
TOTAL = "total"

#: At most this many failure markers are kept (a crash loop must not grow memory).
MAX_ERRORS = 20

_ERROR_LINE = re.compile(
    r"^(?:Traceback \(most recent call last\)|[A-Za-z_.]*(?:Error|Exception): \S|"
    r".*CUDA out of memory|.*RuntimeError: |.*Segmentation fault|.*core dumped)"
)
# mpirun's "[1,0]<stderr>:" (possibly after a date) in front of what the rank printed.
_RANK_PREFIX = re.compile(r"^.*?\[\d+,\d+\]<std(?:out|err)>:")
# Words that make a number-shaped token a loss; a NaN/inf loss marks the run failed.
_NAN_LOSS = re.compile(r"loss(?![ _]?scal)\w*\s*[:=]\s*[-+]?(nan|inf)\b", re.IGNORECASE)

_UNIT_ALIASES = {
    "sequences/sec": "sequences/s",
    "sequences/s": "sequences/s",
    "seq/s": "sequences/s",
    "sentences/sec": "sequences/s",
    "samples/sec": "samples/s",
    "samples/s": "samples/s",
    "images/sec": "images/s",
    "images/s": "images/s",
    "img/s": "images/s",
    "imgs/s": "images/s",
    "tokens/s": "tokens/s",
    "tokens/sec": "tokens/s",
    "words/s": "tokens/s",
    "examples/sec": "examples/s",
    "examples/second": "examples/s",
}


def normalise_unit(text: str | None, default: str | None = None) -> str | None:
    """``sequences/sec`` -> ``sequences/s``; unknown units are kept as written."""
    if not text:
        return default
    text = text.strip().rstrip(".,")
    return _UNIT_ALIASES.get(text.lower(), text)


_NUMBER_AT = re.compile(r"\s*([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+|nan|inf))\s*([A-Za-z.]+/s(?:ec)?)?")


def number_after(line: str, key: str) -> tuple[float | None, str | None]:
    """The number (and a unit such as ``tokens/s`` right after it) following ``key``.

    ``key`` must start a word: ``ips:`` is not found inside ``avg_ips:``. A substring search
    plus an anchored match: much cheaper per line than an unanchored regex, which matters
    for multi-gigabyte logs.
    """
    pos = line.find(key)
    while pos > 0 and (line[pos - 1].isalnum() or line[pos - 1] == "_"):
        pos = line.find(key, pos + 1)
    if pos < 0:
        return None, None
    match = _NUMBER_AT.match(line, pos + len(key))
    if match is None:
        return None, None
    return to_float(match.group(1)), match.group(2)


def to_float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def memory_bytes(value: float, unit: str | None) -> int:
    scale = {"kb": 2**10, "mb": 2**20, "mib": 2**20, "gb": 2**30, "gib": 2**30}
    return int(value * scale.get((unit or "mb").lower(), 2**20))


class RecordingParser(LogParser):
    """Base class: collects steps, failure markers, memory and metadata.

    Hints every parser accepts (all optional, all keyword):
    ``gpus`` (devices of the job: per-device throughput is scaled to the job's total),
    ``batch_size`` (per-device batch size), ``seq_len`` (tokens per sample),
    ``keep_steps`` (False: do not keep the step list, for streaming very large logs; the
    steps are still returned by ``feed``), ``step_sink`` (with ``keep_steps=False``: a
    callable taking the StepRecord fields, called instead of building and returning records).
    ``format_name`` and ``default_unit`` come from the format that builds the parser.
    """

    format_name = ""
    default_unit: str | None = None

    def __init__(self, gpus: int | None = None, batch_size: int | None = None,
                 seq_len: int | None = None, keep_steps: bool = True, step_sink=None,
                 format_name: str | None = None, default_unit: str | None = None, **_: Any):
        # The format that builds the parser names it (LogFormat.new_parser); a parser class
        # may also name itself.
        self.format_name = format_name or self.format_name
        self.default_unit = default_unit or self.default_unit
        self.gpus = gpus
        self.batch_size = batch_size
        self.seq_len = seq_len
        self.keep_steps = keep_steps
        self.step_sink = None if keep_steps else step_sink
        self.steps: list[StepRecord] = []
        self.step_count = 0
        self.errors: list[str] = []
        self.meta: dict[str, Any] = {}
        self.unit: str | None = self.default_unit
        self.scope: str = TOTAL
        self.peak_memory: int | None = None
        self.framework_reported: float | None = None
        self.last_loss: float | None = None
        self._error_count = 0

    # ------------------------------------------------------------------ helpers for subclasses

    def scaled(self, per_device: float | None) -> float | None:
        """Per-device throughput -> job total when ``gpus`` is known; else kept per device."""
        if per_device is None:
            return None
        if self.gpus:
            self.scope = TOTAL
            return per_device * self.gpus
        self.scope = PER_DEVICE
        return per_device

    def record(self, step: int | None = None, **fields: Any) -> StepRecord | None:
        """Count one step; returns it, or None when it went to the streaming ``step_sink``."""
        self.step_count += 1
        loss = fields.get("loss")
        if loss is not None:
            self.last_loss = loss
            if not math.isfinite(loss):
                self.error(f"non-finite loss {loss} at step {step if step is not None else self.step_count}")
        if self.step_sink is not None:
            self.step_sink(self.step_count if step is None else step, **fields)
            return None
        rec = StepRecord(step=self.step_count if step is None else step, **fields)
        if self.keep_steps:
            self.steps.append(rec)
        return rec

    def error(self, message: str) -> None:
        self._error_count += 1
        if len(self.errors) < MAX_ERRORS:
            self.errors.append(message[:300])

    def check_failure(self, line: str) -> bool:
        """Record the line if it is a failure marker (traceback, exception, NaN loss)."""
        if ("rror" in line or "Traceback" in line or "xception" in line or "out of memory" in line
                or "fault" in line or "dumped" in line):
            stripped = _RANK_PREFIX.sub("", line.strip(), count=1)
            if _ERROR_LINE.match(stripped):
                self.error(stripped)
                return True
        if "oss" in line and ("nan" in line or "NaN" in line or "inf" in line) and _NAN_LOSS.search(line):
            self.error("non-finite loss: " + line.strip())
            return True
        return False

    def marked_json(self, line: str, marker: str) -> dict | None:
        """The JSON object after ``marker`` (FlagPerf ``[PerfLog]``, MLPerf ``:::MLLOG``).

        Lines without the marker are checked for failure markers instead; a payload that is
        not a JSON object is ignored.
        """
        start = line.find(marker)
        if start < 0:
            self.check_failure(line)
            return None
        try:
            payload = json.loads(line[start + len(marker):])
        except ValueError:
            return None
        return payload if isinstance(payload, dict) else None

    def note_memory(self, nbytes: int) -> None:
        self.peak_memory = max(self.peak_memory or 0, nbytes)

    def check_other_line(self, line: str) -> None:
        """A line that is no step or summary of the format: the harness scripts' own
        peak-memory line (``peak_memory_bytes``, where no allocator reports one), else perhaps
        a failure marker."""
        peak = peak_memory_bytes(line)
        if peak is not None:
            self.note_memory(peak)
            return
        self.check_failure(line)

    def note_summary(self, value: float, field: str) -> None:
        """The run's own summary line: its throughput (what ``--method framework`` reports),
        the field it came from, and that the run got to its end."""
        self.framework_reported = value
        self.meta["framework_field"] = field
        self.meta["run_complete"] = True

    # ------------------------------------------------------------------ LogParser

    def finish(self) -> ParsedLog:
        meta = dict(self.meta)
        meta["throughput_scope"] = self.scope
        meta["steps_parsed"] = self.step_count
        if self.gpus:
            meta.setdefault("gpus", self.gpus)
        if self.batch_size and "batch_size" not in meta:
            meta["batch_size"] = self.batch_size
        if self._error_count > len(self.errors):
            meta["errors_total"] = self._error_count
        return ParsedLog(
            format=self.format_name,
            unit=self.unit,
            steps=self.steps,
            framework_reported=self.framework_reported,
            peak_memory_bytes=self.peak_memory,
            errors=self.errors,
            meta=meta,
        )
