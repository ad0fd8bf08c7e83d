"""Which registered format a log is written in, from its first characteristic lines."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from harness.errors import UserInputError
from harness.logformat import LogFormat
from harness.logparse.summary import bounded_lines

#: Lines read while looking for a characteristic one (logs often open with long preambles).
DETECT_MAX_LINES = 200_000


def detect_format(path: Path, formats: Iterable[LogFormat],
                  max_lines: int = DETECT_MAX_LINES) -> LogFormat:
    """The format of the first line that some format recognises.

    When two formats recognise the same line the one registered first wins; formats are
    written so that their ``detect`` does not overlap. Raises ``UserInputError`` when no
    line in the first ``max_lines`` is recognised.
    """
    candidates = list(formats)
    read = 0
    with open(path, encoding="utf-8", errors="replace") as handle:
        for line in bounded_lines(handle):
            if read >= max_lines:
                break
            read += 1
            for fmt in candidates:
                if fmt.detect(line):
                    return fmt
    names = ", ".join(sorted(f.name for f in candidates))
    where = f"none of its first {max_lines:,} lines" if read >= max_lines else f"none of its {read:,} lines"
    raise UserInputError(
        f"{path}: {where} is recognised by a log format ({names}); "
        "force one with --format, or use keyword mode with --keyword"
    )
