"""PaddlePaddle ecosystem log formats: PaddleNLP (and PaddleFleetX) and PaddleClas.

PaddleNLP / FleetX step lines, all produced by rank 0 (their ``ips`` is per GPU,
``ips_total`` is the whole job)::

    total step: 10, epoch: 0, batch: 9, loss: 11.08, avg_reader_cost: 0.05 sec,
        avg_batch_cost: 0.35 sec, avg_samples: 96.00000, ips: 234.71 sequences/sec
    tobal step: 10, ...                                  (the typo of older releases)
    global step 10, epoch: 0, batch: 9, loss: 9.9, avg_reader_cost: 0.1 sec,
        avg_batch_cost: 0.5 sec, speed: 2.0 step/s, ips_total: 16384 tokens/s,
        ips: 2048 tokens/s, learning rate: 1.0e-05
    [train] epoch: 0, batch: 9, loss: 9.9, avg_batch_cost: 0.5 sec, speed: 2.0 step/s,
        ips_total: 16384 tokens/s, ips: 2048 tokens/s, learning rate: 1.0e-05

PaddleClas step lines (per GPU)::

    [2023/07/28 06:42:45] ppcls INFO: epoch:0   train step:10   lr: 0.100000, loss:  8.3496
        top1: 0.0 top5: 0.0 batch_cost: 0.64841 s, reader_cost: 0.00067 s, ips: 394.81 samples/sec.
    [Train][Epoch 1/120][Iter: 10/5005]lr(PiecewiseDecay): 0.1, top1: 0.0, top5: 0.0,
        CELoss: 7.0, loss: 7.0, batch_cost: 0.3 s, reader_cost: 0.0 s, ips: 800.0 images/sec, ...

The Paddle benchmark convention (``trimmed``) is the default method of both: skip the first
10 records, sort the rest, drop the 5 lowest and 5 highest, average the middle.

Plugins call ``Format().parse_file(path, seq_len=..., gpus=..., batch_size=...)``: with
``gpus`` the per-GPU ``ips`` is scaled to the job's total; without it the steps stay per GPU
and ``meta["throughput_scope"] == "per_device"``.
"""

from __future__ import annotations

import math
import re
from typing import Any

from harness.logformat import LogFormat
from harness.logparse.recorder import RecordingParser, memory_bytes, normalise_unit, number_after, to_float
from harness.models import StepRecord

_NUM = r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))"

# --------------------------------------------------------------------------- shared fields

# Detection only (called on few lines); parsing uses number_after(), a substring search plus
# an anchored match, because unanchored regexes cost microseconds on every step line.
_IPS = re.compile(r"\bips:\s*" + _NUM + r"\s*([A-Za-z]+/s(?:ec)?)?")
_IPS_TOTAL = re.compile(r"\bips_total:\s*" + _NUM + r"\s*([A-Za-z]+/s(?:ec)?)?")
_LR_KEYS = ("learning rate:", "learning_rate:", "lr:")
_MEMORY_KEYS = ("max_memory_allocated:", "max_memory_reserved:", "max_mem_allocated:", "max_mem_reserved:")
_MEMORY_UNIT = re.compile(r"\s*[\d.]+\s*([KMG]i?B)")


def _learning_rate(line: str) -> float | None:
    for key in _LR_KEYS:
        value, _ = number_after(line, key)
        if value is not None:
            return value
    start = line.find("lr(")  # PaddleClas: "lr(PiecewiseDecay): 0.10000000"
    if start >= 0:
        close = line.find("):", start)
        if close >= 0:
            return number_after(line[close:], "):")[0]
    return None


def _batch_cost(line: str) -> float | None:
    value, _ = number_after(line, "avg_batch_cost:")
    return value if value is not None else number_after(line, "batch_cost:")[0]


# Paddle's launcher prints its configuration: the GPU count of the job follows from it.
_LAUNCH_NNODES = re.compile(r"LAUNCH INFO .*\bnnodes:\s*(\d+)")
_LAUNCH_DEVICES = re.compile(r"LAUNCH INFO .*\bdevices:\s*([\d,]+)\s*$")
_NAMESPACE_BATCH = re.compile(r"Namespace\(.*?\bbatch_size=(\d+)")
_NAMESPACE_MAX_STEPS = re.compile(r"Namespace\(.*?\bmax_steps=(\d+)")


class _PaddleParser(RecordingParser):
    """What PaddleNLP and PaddleClas logs share: launcher configuration and memory."""

    def __init__(self, **hints: Any):
        super().__init__(**hints)
        self._nnodes: int | None = None
        self._devices: int | None = None

    def feed_common(self, line: str) -> None:
        if "LAUNCH INFO" in line:
            match = _LAUNCH_NNODES.search(line)
            if match:
                self._nnodes = int(match.group(1))
            match = _LAUNCH_DEVICES.search(line)
            if match:
                self._devices = len([d for d in match.group(1).split(",") if d])
            return
        if "Namespace(" in line:
            match = _NAMESPACE_BATCH.search(line)
            if match:
                self.meta["batch_size"] = int(match.group(1))
            match = _NAMESPACE_MAX_STEPS.search(line)
            if match:
                self.meta["max_steps"] = int(match.group(1))
            return
        self.check_other_line(line)

    def memory(self, line: str) -> None:
        if "max_mem" in line:
            for key in _MEMORY_KEYS:
                value, _ = number_after(line, key)
                if value is not None:
                    unit = _MEMORY_UNIT.match(line, line.find(key) + len(key))
                    self.note_memory(memory_bytes(value, unit.group(1) if unit else None))
                    return

    def finish(self):
        if self._devices:
            self.meta.setdefault("gpus", self._devices * (self._nnodes or 1))
        return super().finish()


# --------------------------------------------------------------------------- PaddleNLP

_NLP_STEP = re.compile(r"\b(?:global|total|tobal) step[:\s]\s*(\d+)")
_NLP_STEP_KEYS = ("global step", "total step:", "tobal step:")


# Fast path: the two layouts PaddleNLP actually prints, read by one anchored match.
_NLP_FAST = re.compile(
    r"(?:global step:?|total step:|tobal step:) (\d+), epoch: \d+, batch: \d+, loss: ([^,]+), "
    r"avg_reader_cost: [^,]+ sec, avg_batch_cost: ([^,]+) sec, "
    r"(?:avg_samples: ([^,]+), ips: ([^ ,]+) ([A-Za-z.]+/s(?:ec)?)"
    r"|speed: [^,]+ step/s, ips_total: ([^ ,]+) ([A-Za-z.]+/s(?:ec)?), ips: [^,]+, learning rate: ([^ ,\n]+))"
)


def _nlp_step(line: str) -> int | None:
    for key in _NLP_STEP_KEYS:
        if key in line:
            value, _ = number_after(line, key)
            if value is not None:
                return int(value)
    return None


def _is_nlp_step_line(line: str) -> bool:
    return "ips" in line and (" step" in line or "[train]" in line)


class PaddleNLPParser(_PaddleParser):
    def __init__(self, **hints: Any):
        super().__init__(**hints)
        self._unit_text: str | None = None

    def feed(self, line: str) -> StepRecord | None:
        if _is_nlp_step_line(line):
            fast = self._fast(line)
            if fast is not None:
                return fast or None
            step = _nlp_step(line)
            if step is not None or "[train]" in line:
                record = self._step(line, step)
                if record is not None:
                    return record
        self.feed_common(line)
        return None

    def _fast(self, line: str):
        """The step of a line in a standard layout (``False`` when it went to the sink), or None."""
        for key in _NLP_STEP_KEYS:
            start = line.find(key)
            if start >= 0:
                break
        else:
            return None
        match = _NLP_FAST.match(line, start)
        if match is None:
            return None
        step, loss, cost, samples, ips, ips_unit, total, total_unit, lr = match.groups()
        try:
            if total is not None:
                throughput, unit_text = float(total), total_unit
                learning_rate = float(lr)
            else:
                throughput, unit_text = self.scaled(float(ips)), ips_unit
                learning_rate = None
                if "batch_size" not in self.meta:
                    self.meta["batch_size"] = int(float(samples))
            step_time, loss = float(cost), float(loss)
        except ValueError:
            return None
        if unit_text != self._unit_text:
            self._unit_text = unit_text
            self.unit = normalise_unit(unit_text, self.unit)
        if "max_mem" in line:
            self.memory(line)
        if self.step_sink is not None and math.isfinite(loss):
            # The streaming hot path: straight to the sink (record() does the same, slower).
            self.step_count += 1
            self.last_loss = loss
            self.step_sink(int(step), step_time, throughput, None, loss, learning_rate)
            return False
        return self.record(step=int(step), throughput=throughput, step_time_s=step_time, loss=loss,
                           learning_rate=learning_rate) or False

    def _step(self, line: str, step: int | None) -> StepRecord | None:
        throughput, unit_text = number_after(line, "ips_total:")
        if throughput is None:
            per_device, unit_text = number_after(line, "ips:")
            if per_device is None:
                return None
            throughput = self.scaled(per_device)
        self.unit = normalise_unit(unit_text, self.unit)
        samples, _ = number_after(line, "avg_samples:")
        self.memory(line)
        if samples is not None and "batch_size" not in self.meta:
            self.meta["batch_size"] = int(samples)
        return self.record(
            step=step,
            throughput=throughput,
            step_time_s=_batch_cost(line),
            loss=number_after(line, "loss:")[0],
            learning_rate=_learning_rate(line),
        )


class PaddleNLPFormat(LogFormat, name="paddlenlp", unit="samples/s", framework="paddle",
                      default_method="trimmed", parser=PaddleNLPParser):
    """PaddleNLP / PaddleFleetX step lines: 'global step', 'total step', 'tobal step', '[train]'
    with ips / ips_total"""

    def detect(self, line: str) -> bool:
        if not _is_nlp_step_line(line):
            return False
        if not (_IPS.search(line) or _IPS_TOTAL.search(line)):
            return False
        return bool(_NLP_STEP.search(line)) or "[train]" in line


# --------------------------------------------------------------------------- PaddleClas

_CLAS_STATIC = re.compile(r"\bepoch:\s*(\d+)\s+train step:\s*(\d+)")
_CLAS_DYNAMIC = re.compile(r"\[Train\]\[Epoch (\d+)/(\d+)\]\[Iter:\s*(\d+)/(\d+)\]")


def _is_clas_step_line(line: str) -> bool:
    return "ips:" in line and ("train step" in line or "[Train][Epoch" in line)


class PaddleClasParser(_PaddleParser):
    def __init__(self, **hints: Any):
        super().__init__(**hints)
        self._last_epoch: int | None = None
        self._epoch_offset = 0
        self._last_step = 0

    def feed(self, line: str) -> StepRecord | None:
        if _is_clas_step_line(line):
            record = self._step(line)
            if record is not None:
                return record
        self.feed_common(line)
        return None

    def _step(self, line: str) -> StepRecord | None:
        ips, unit_text = number_after(line, "ips:")
        if ips is None:
            return None
        if "train step:" in line:
            epoch, _ = number_after(line, "epoch:")
            step, _ = number_after(line, "train step:")
            if epoch is None or step is None:
                return None
            epoch, step = int(epoch), int(step)
        else:
            dynamic = _CLAS_DYNAMIC.search(line)
            if dynamic is None:
                return None
            epoch, step = int(dynamic.group(1)), int(dynamic.group(3))
            self.meta["epochs"] = int(dynamic.group(2))
            self.meta["steps_per_epoch"] = int(dynamic.group(4))
        # Steps restart every epoch; a running offset keeps them increasing.
        if self._last_epoch is not None and epoch != self._last_epoch:
            self._epoch_offset = self._last_step
        self._last_epoch = epoch
        global_step = self._epoch_offset + step
        self._last_step = global_step
        self.unit = normalise_unit(unit_text, self.unit)
        self.memory(line)
        return self.record(
            step=global_step,
            throughput=self.scaled(ips),
            step_time_s=_batch_cost(line),
            loss=number_after(line, "loss:")[0],
            learning_rate=_learning_rate(line),
        )


class PaddleClasFormat(LogFormat, name="paddleclas", unit="images/s", framework="paddle",
                       default_method="trimmed", parser=PaddleClasParser):
    """PaddleClas step lines: 'epoch:E train step:S ... ips: X samples/sec' or '[Train][Epoch ..]'"""

    def detect(self, line: str) -> bool:
        return _is_clas_step_line(line) and bool(
            (_CLAS_STATIC.search(line) or _CLAS_DYNAMIC.search(line)) and _IPS.search(line)
        )
