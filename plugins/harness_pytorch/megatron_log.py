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
# Each field is "name: value |". Every field is looked up by its own name and its value read
# only up to the next bar or blank, so a field inserted between two known ones (newer
# Megatron's "throughput per GPU (TFLOP/s/GPU)" before "learning rate") cannot shift what
# we read. One targeted search per field is also several times faster than splitting the
# whole line, which matters for multi-gigabyte logs.
_VALUE = r"\s*:\s*([^|\s]+)"
_ELAPSED = re.compile(r"elapsed time per iteration \(ms\)" + _VALUE)
_GLOBAL_BATCH = re.compile(r"global batch size" + _VALUE)
_LM_LOSS = re.compile(r"\| lm loss" + _VALUE)
_LEARNING_RATE = re.compile(r"\| learning rate" + _VALUE)
_TFLOPS = re.compile(r"\(TFLOP/s/GPU\)" + _VALUE)
_NAN_ITERATIONS = re.compile(r"number of nan iterations" + _VALUE)
_PEAK_MEMORY = re.compile(r"peak memory \(MB\):\s*([\d.]+)")
_MAX_ALLOCATED = re.compile(r"max allocated:\s*([\d.]+)")
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\)|^\w*Error: |CUDA out of memory")


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _search_number(pattern: re.Pattern, line: str) -> float | None:
    match = pattern.search(line)
    return _number(match.group(1)) if match else None


class MegatronParser(LogParser):
    def __init__(self, seq_len: int | None = None, keep_steps: bool = True):
        self.seq_len = seq_len
        self.keep_steps = keep_steps
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
        elapsed_ms = _search_number(_ELAPSED, line)
        batch = _search_number(_GLOBAL_BATCH, line)
        loss = _search_number(_LM_LOSS, line)
        self.meta["max_steps"] = int(head.group(2))
        if batch is not None:
            self.meta["global_batch_size"] = int(batch)
        if loss is not None and not math.isfinite(loss):
            self.errors.append(f"non-finite loss at iteration {head.group(1)}: {loss}")
        if "nan iterations" in line:
            nan_iters = _search_number(_NAN_ITERATIONS, line)
            if nan_iters:
                self.errors.append(f"{int(nan_iters)} nan iterations by iteration {head.group(1)}")
        if "TFLOP/s/GPU" in line:
            tflops = _search_number(_TFLOPS, line)
            if tflops is not None:
                self.meta["tflops_per_gpu"] = tflops
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
            learning_rate=_search_number(_LEARNING_RATE, line),
        )
        if self.keep_steps:
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
    framework = "pytorch"
    default_method = "mean-after-warmup"

    def detect(self, line: str) -> bool:
        return bool(_ITERATION.search(line)) and "elapsed time per iteration" in line

    def new_parser(self, seq_len: int | None = None, keep_steps: bool = True,
                   **_: Any) -> MegatronParser:
        return MegatronParser(seq_len=seq_len, keep_steps=keep_steps)
