"""Tokenising NVIDIA DLLogger stdout lines (used by NGC PyTorch, TensorFlow and MXNet).

A DLLogger line is ``DLL <date> <time> - <step> <key> : <value> [<unit>]  <key> : ...``
where ``<step>`` is ``PARAMETER``, ``Summary:``, ``Epoch: E [Iteration: I]``,
``Training Epoch: E Training Iteration: I``, ``Iteration: I``, a tuple ``(E, I)`` / ``()`` or nothing.
Lines written through MPI (``[1,0]<stdout>:``), with a date prefix, or glued behind a tqdm
progress bar are handled by looking for ``DLL `` anywhere in the line; only rank 0's
lines (or lines without a rank prefix) are read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

_HEAD = re.compile(r"DLL (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) - (.*)")
_STEP_EPOCH = re.compile(r"^\s*(?:Training )?Epoch:\s*(\d+)(?:\s+(?:Training )?Iteration:\s*(\d+))?")
_STEP_ITERATION = re.compile(r"^\s*(?:Training )?Iteration:\s*(\d+)")
_STEP_TUPLE = re.compile(r"^\s*\((\d+)?(?:,\s*(\d+))?\)")
_FIELD = re.compile(r"([A-Za-z_][\w.]*) : (\S+)(?: +([A-Za-z%]+/s(?:ec)?|%|s|None)(?=\s|$))?")
_RANK = re.compile(r"\[\d+,(\d+)\]<std(?:out|err)>")


@dataclass
class DLLRecord:
    """One DLLogger line."""

    timestamp: str
    kind: str  # "parameter", "summary", "step", "epoch", "other"
    epoch: int | None = None
    iteration: int | None = None
    fields: dict[str, str] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)

    def number(self, key: str) -> float | None:
        value = self.fields.get(key)
        if value is None:
            return None
        try:
            return float(value.rstrip(","))
        except ValueError:
            return None

    def whole_numbers(self, names: dict[str, str]) -> dict[str, int]:
        """The fields of ``names`` (field -> name) that hold a number, as whole numbers under
        their names: ``{"num_epochs": "epochs"}`` -> ``{"epochs": 90}``."""
        numbers = {name: self.number(key) for key, name in names.items()}
        return {name: int(value) for name, value in numbers.items() if value is not None}

    def seconds(self) -> float:
        """The timestamp as seconds since the epoch (local wall clock of the log)."""
        return datetime.strptime(self.timestamp, "%Y-%m-%d %H:%M:%S.%f").timestamp() \
            if "." in self.timestamp else datetime.strptime(self.timestamp, "%Y-%m-%d %H:%M:%S").timestamp()


def _other_rank(line: str, start: int) -> bool:
    """True when the text before ``start`` ends in another rank's ``[1,N]<stdout>:`` prefix."""
    tag = line.rfind("]<std", 0, start)
    if tag < 0:
        return False
    match = _RANK.match(line, line.rfind("[", 0, tag))
    return match is not None and match.group(1) != "0"


def parse_dll_line(line: str) -> DLLRecord | None:
    """The DLLogger record in ``line``, or None (no ``DLL`` marker, or another rank's line)."""
    start = line.find("DLL 2")
    if start < 0:
        return None
    if start and _other_rank(line, start):
        return None
    # "DLL 2023-08-04 05:46:28.892809 - ": fixed widths, checked without a regex (hot path).
    if line[start + 30:start + 33] == " - " and line[start + 14] == " ":
        timestamp, rest = line[start + 4:start + 30], line[start + 33:].rstrip("\n")
    else:
        head = _HEAD.match(line, start)
        if head is None:
            return None
        timestamp, rest = head.group(1), head.group(2)
    epoch = iteration = None
    if rest.startswith("PARAMETER"):
        kind, body = "parameter", rest[len("PARAMETER"):]
    elif rest.startswith("Summary:"):
        kind, body = "summary", rest[len("Summary:"):]
    else:
        body = rest
        match = _STEP_EPOCH.match(rest) or _STEP_TUPLE.match(rest)
        only_iteration = None if match else _STEP_ITERATION.match(rest)
        if only_iteration:
            iteration = int(only_iteration.group(1))
            body = rest[only_iteration.end():]
            kind = "step"
        elif match:
            epoch = int(match.group(1)) if match.group(1) is not None else None
            iteration = int(match.group(2)) if match.group(2) is not None else None
            body = rest[match.end():]
            kind = "step" if iteration is not None else ("epoch" if epoch is not None else "other")
        else:
            kind = "other"
    found = _FIELD.findall(body)
    fields = {key: value for key, value, _ in found}
    units = {key: unit for key, _, unit in found if unit and unit != "None"}
    return DLLRecord(timestamp, kind, epoch, iteration, fields, units)
