"""Megatron-LM iteration lines (old and new layouts) as a registered log format.

Old: ``iteration 10/ 100 | consumed samples: 160 | elapsed time per iteration (ms): 1234.5 |
learning rate: 1.0E-04 | global batch size: 16 | lm loss: 1.08E+01 | ...``
New: the same with ``throughput per GPU (TFLOP/s/GPU): 123.4 |`` before ``learning rate``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from harness.logformat import LogFormat, LogParser
from harness.models import ParsedLog, StepRecord

_ITERATION = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|")
# Each field is "name: value |"; values are read non-greedily up to the next bar so a new
# field inserted between two known ones cannot shift what we read.
_FIELD = re.compile(r"\|\s*([A-Za-z][^:|]*?)\s*:\s*([^|]+?)\s*(?=\|)")
_PEAK_MEMORY = re.compile(r"peak memory \(MB\):\s*([\d.]+)")
_MAX_ALLOCATED = re.compile(r"max allocated:\s*([\d.]+)")
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\)|^\w*Error: |CUDA out of memory")


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


class MegatronParser(LogParser):
    def __init__(self, seq_len: int | None = None):
        self.seq_len = seq_len
        self.steps: list[StepRecord] = []
        self.errors: list[str] = []
        self.peak_mb: float | None = None
        self.meta: dict[str, Any] = {}

    def feed(self, line: str) -> StepRecord | None:
        if "iteration" in line and "elapsed time per iteration" in line:
            return self._iteration(line)
        if "memory (MB)" in line:
            match = _PEAK_MEMORY.search(line) or _MAX_ALLOCATED.search(line)
            if match:
                self.peak_mb = max(self.peak_mb or 0.0, float(match.group(1)))
        elif _TRACEBACK.search(line):
            self.errors.append(line.strip()[:300])
        return None

    def _iteration(self, line: str) -> StepRecord | None:
        head = _ITERATION.search(line)
        if not head:
            return None
        fields = {k.strip().lower(): v for k, v in _FIELD.findall(line + "|")}
        elapsed_ms = _number(fields.get("elapsed time per iteration (ms)", ""))
        batch = _number(fields.get("global batch size", ""))
        loss = _number(fields.get("lm loss", ""))
        self.meta["max_steps"] = int(head.group(2))
        if batch is not None:
            self.meta["global_batch_size"] = int(batch)
        if loss is not None and not math.isfinite(loss):
            self.errors.append(f"non-finite loss at iteration {head.group(1)}: {loss}")
        nan_iters = _number(fields.get("number of nan iterations", "0") or "0")
        if nan_iters:
            self.errors.append(f"{int(nan_iters)} nan iterations by iteration {head.group(1)}")
        throughput = None
        if elapsed_ms and batch:
            per_second = batch / (elapsed_ms / 1000.0)
            throughput = per_second * self.seq_len if self.seq_len else per_second
        record = StepRecord(
            step=int(head.group(1)),
            step_time_s=elapsed_ms / 1000.0 if elapsed_ms is not None else None,
            throughput=throughput,
            samples=int(batch) if batch is not None else None,
            loss=loss,
            learning_rate=_number(fields.get("learning rate", "")),
        )
        self.steps.append(record)
        return record

    def finish(self) -> ParsedLog:
        return ParsedLog(
            format="megatron",
            unit="tokens/s" if self.seq_len else "samples/s",
            steps=self.steps,
            peak_memory_bytes=int(self.peak_mb * 2**20) if self.peak_mb else None,
            errors=self.errors,
            meta=self.meta,
        )


class MegatronFormat(LogFormat):
    name = "megatron"
    description = "Megatron-LM iteration lines (with or without TFLOP/s/GPU)"
    unit = "tokens/s"
    default_method = "mean-after-warmup"

    def detect(self, line: str) -> bool:
        return bool(_ITERATION.search(line)) and "elapsed time per iteration" in line

    def new_parser(self, seq_len: int | None = None, **_: Any) -> MegatronParser:
        return MegatronParser(seq_len=seq_len)
