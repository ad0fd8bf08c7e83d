"""Megatron-LM iteration lines (old and new layouts) as a registered log format.

Old: ``iteration 10/ 100 | consumed samples: 160 | elapsed time per iteration (ms): 1234.5 |
learning rate: 1.0E-04 | global batch size: 16 | lm loss: 1.08E+01 | ...``
New: the same with ``throughput per GPU (TFLOP/s/GPU): 123.4 |`` before ``learning rate``.

Megatron-DeepSpeed runs with pipeline parallelism may log only DeepSpeed's PipelineEngine
lines (rank 0, every ``steps_per_print`` iterations, the job's samples per second)::

    worker-0: steps: 20 loss: 7.1523 iter time (s): 1.234 samples/sec: 207.456

Multi-node launches (pdsh) put the host name before every line (``worker-0: ``), and more
than one host may print the same iteration: a record repeating the previous iteration is
dropped. A log holding both kinds keeps the kind it printed first.
"""

from __future__ import annotations

import math
import re
from typing import Any

from harness.logformat import LogFormat, LogParser
from harness.logparse.peak_memory import PEAK_MEMORY_MB
from harness.models import ParsedLog, StepRecord

_ITERATION = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|")
# Each field is "name: value |". Every field is looked up by its own name and its value read
# only up to the next bar, so a field inserted between two known ones (newer Megatron's
# "throughput per GPU (TFLOP/s/GPU)" before "learning rate") cannot shift what we read.
# Plain substring searches instead of regexes: multi-gigabyte logs are mostly these lines.
_ELAPSED = "elapsed time per iteration (ms):"
_GLOBAL_BATCH = "global batch size:"
_LM_LOSS = "| lm loss:"
_LEARNING_RATE = "| learning rate:"
_TFLOPS = "(TFLOP/s/GPU):"
_NAN_ITERATIONS = "number of nan iterations:"
_NO_NAN_ITERATIONS = "number of nan iterations:   0 |"  # Megatron's "{:3d}": the usual case
# Fast path for the field order Megatron (and train_gpt.py) print; anything else falls back
# to the per-field lookups above.
_STANDARD = re.compile(
    r"iteration\s+(\d+)\s*/\s*(\d+) \| consumed samples:\s*\d+ \| "
    r"elapsed time per iteration \(ms\): ([^|]+)\|"
    r"(?: throughput per GPU \(TFLOP/s/GPU\): ([^|]+)\|)?"
    r" learning rate: ([^|]+)\| global batch size: ([^|]+)\| lm loss: ([^|]+)\|"
)
_PIPE_STEPS = re.compile(r"\bsteps:\s*(\d+)\s+loss:\s*(\S+).*?iter time \(s\):\s*([\d.]+)\s+"
                         r"samples/sec:\s*([\d.]+)")
_MAX_ALLOCATED = re.compile(r"max allocated:\s*([\d.]+)")
_TRACEBACK = re.compile(r"^Traceback \(most recent call last\)|^\w*Error: |CUDA out of memory")


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _search_number(key: str, line: str) -> float | None:
    """The number after ``key`` up to the next ``|`` (None if absent or not a number)."""
    start = line.find(key)
    if start < 0:
        return None
    start += len(key)
    end = line.find("|", start)
    try:
        return float(line[start:end] if end >= 0 else line[start:])
    except ValueError:
        return None


class MegatronParser(LogParser):
    def __init__(self, seq_len: int | None = None, keep_steps: bool = True, step_sink=None,
                 **_: Any):
        # Hints it has no use for (gpus, batch size, the format's name and unit) are ignored:
        # Megatron-LM prints job totals, and the unit follows from seq_len.
        self.seq_len = seq_len
        self.keep_steps = keep_steps
        # Streaming readers of huge logs pass a callable taking the StepRecord fields; steps
        # then go to it instead of being built and returned (see harness.logparse.summary).
        self.step_sink = None if keep_steps else step_sink
        self.steps: list[StepRecord] = []
        self.errors: list[str] = []
        self.peak_mb: float | None = None
        self.meta: dict[str, Any] = {}
        self._kind: str | None = None  # "iteration" or "steps": the first kind of record seen
        self._last_step: int | None = None

    def feed(self, line: str) -> StepRecord | None:
        if "iteration" in line and "elapsed time per iteration" in line:
            return self._iteration(line) if self._kind in (None, "iteration") else None
        if "steps:" in line and "samples/sec:" in line and self._kind in (None, "steps"):
            match = _PIPE_STEPS.search(line)
            if match:
                return self._pipeline_steps(match)
        if "memory (MB)" in line:
            match = PEAK_MEMORY_MB.search(line) or _MAX_ALLOCATED.search(line)
            if match:
                self.peak_mb = max(self.peak_mb or 0.0, float(match.group(1)))
        elif ("Traceback" in line or "Error" in line or "out of memory" in line) and _TRACEBACK.search(line):
            self.errors.append(line.strip()[:300])
        return None

    def _pipeline_steps(self, match: re.Match) -> StepRecord | None:
        """DeepSpeed PipelineEngine: the job's samples/s over the last steps_per_print iterations."""
        step, loss, seconds, per_second = match.groups()
        loss = _number(loss)
        throughput = float(per_second) * self.seq_len if self.seq_len else float(per_second)
        self.meta["throughput_records"] = "DeepSpeed pipeline 'steps:' lines (samples/sec over the interval)"
        return self._emit("steps", (int(step), float(seconds), throughput, None, loss, None))

    def _emit(self, kind: str, fields: tuple) -> StepRecord | None:
        if fields[0] == self._last_step:
            return None  # the same iteration printed by another host
        self._kind, self._last_step = kind, fields[0]
        if self.step_sink is not None:
            self.step_sink(*fields)
            return None
        record = StepRecord(step=fields[0], step_time_s=fields[1], throughput=fields[2],
                            samples=fields[3], loss=fields[4], learning_rate=fields[5])
        if self.keep_steps:
            self.steps.append(record)
        return record

    def _iteration(self, line: str) -> StepRecord | None:
        standard = _STANDARD.search(line)
        if standard:
            # The usual field order (old or new layout): one regex reads every field.
            step, total, elapsed, tflops, lr, batch, loss = standard.groups()
            try:
                elapsed_ms, batch, loss, learning_rate = float(elapsed), float(batch), float(loss), float(lr)
            except ValueError:
                elapsed_ms, batch, loss, learning_rate = _number(elapsed), _number(batch), _number(loss), _number(lr)
            tflops = _number(tflops) if tflops else None
        else:
            head = _ITERATION.search(line)
            if not head:
                return None
            step, total = head.groups()
            elapsed_ms = _search_number(_ELAPSED, line)
            batch = _search_number(_GLOBAL_BATCH, line)
            loss = _search_number(_LM_LOSS, line)
            learning_rate = _search_number(_LEARNING_RATE, line)
            tflops = _search_number(_TFLOPS, line) if "TFLOP/s/GPU" in line else None
        self.meta["max_steps"] = int(total)
        if batch is not None:
            self.meta["global_batch_size"] = int(batch)
        if tflops is not None:
            self.meta["tflops_per_gpu"] = tflops
        if loss is not None and not math.isfinite(loss):
            self.errors.append(f"non-finite loss at iteration {step}: {loss}")
        nan_iters = None if _NO_NAN_ITERATIONS in line else _search_number(_NAN_ITERATIONS, line)
        if nan_iters:
            self.errors.append(f"{int(nan_iters)} nan iterations by iteration {step}")
        throughput = None
        if elapsed_ms and batch:
            per_second = batch / (elapsed_ms / 1000.0)
            throughput = per_second * self.seq_len if self.seq_len else per_second
        fields = (int(step), elapsed_ms / 1000.0 if elapsed_ms is not None else None, throughput,
                  int(batch) if batch is not None else None, loss, learning_rate)
        return self._emit("iteration", fields)

    def finish(self) -> ParsedLog:
        return ParsedLog(
            format="megatron",
            unit="tokens/s" if self.seq_len else "samples/s",
            steps=self.steps,
            peak_memory_bytes=int(self.peak_mb * 2**20) if self.peak_mb else None,
            errors=self.errors,
            meta={**self.meta, **({} if self.seq_len else {"per_sample_throughput": True})},
        )


class MegatronFormat(LogFormat, name="megatron", unit="tokens/s", framework="pytorch",
                     default_method="mean-after-warmup", parser=MegatronParser):
    """Megatron-LM iteration lines (with or without TFLOP/s/GPU), Megatron-DeepSpeed's pipeline
    'steps: N loss: L iter time (s): T samples/sec: S' lines; host-name prefixes"""

    def detect(self, line: str) -> bool:
        if "steps:" in line and "iter time (s):" in line:
            return bool(_PIPE_STEPS.search(line))
        return bool(_ITERATION.search(line)) and "elapsed time per iteration" in line
