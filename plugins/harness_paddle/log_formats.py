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

import re
from typing import Any

from harness.logformat import LogFormat
from harness.logparse.recorder import RecordingParser, memory_bytes, normalise_unit, to_float
from harness.models import StepRecord

_NUM = r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))"

# --------------------------------------------------------------------------- shared fields

_IPS = re.compile(r"\bips:\s*" + _NUM + r"\s*([A-Za-z]+/s(?:ec)?)?")
_IPS_TOTAL = re.compile(r"\bips_total:\s*" + _NUM + r"\s*([A-Za-z]+/s(?:ec)?)?")
_LOSS = re.compile(r"\bloss:\s*" + _NUM, re.IGNORECASE)
_LR = re.compile(r"\b(?:learning rate|learning_rate|lr(?:\([A-Za-z]+\))?):\s*" + _NUM)
_BATCH_COST = re.compile(r"\b(?:avg_)?batch_cost:\s*" + _NUM)
_AVG_SAMPLES = re.compile(r"\bavg_samples:\s*" + _NUM)
_MEMORY = re.compile(r"max_mem(?:ory)?_(?:allocated|reserved):\s*" + _NUM + r"\s*([KMG]i?B)?",
                     re.IGNORECASE)
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
        self.check_failure(line)

    def memory(self, line: str) -> None:
        if "max_mem" in line:
            match = _MEMORY.search(line)
            if match and to_float(match.group(1)) is not None:
                self.note_memory(memory_bytes(float(match.group(1)), match.group(2)))

    def finish(self):
        if self._devices:
            self.meta.setdefault("gpus", self._devices * (self._nnodes or 1))
        return super().finish()


# --------------------------------------------------------------------------- PaddleNLP

_NLP_STEP = re.compile(r"\b(?:global|total|tobal) step[:\s]\s*(\d+)")
_NLP_TRAIN_BATCH = re.compile(r"\[train\].*?\bbatch:\s*(\d+)")


def _is_nlp_step_line(line: str) -> bool:
    return "ips" in line and (" step" in line or "[train]" in line)


class PaddleNLPParser(_PaddleParser):
    format_name = "paddlenlp"
    default_unit = "samples/s"

    def feed(self, line: str) -> StepRecord | None:
        if _is_nlp_step_line(line):
            step_match = _NLP_STEP.search(line)
            if step_match or "[train]" in line:
                record = self._step(line, step_match)
                if record is not None:
                    return record
        self.feed_common(line)
        return None

    def _step(self, line: str, step_match: re.Match | None) -> StepRecord | None:
        total = _IPS_TOTAL.search(line)
        per_device = _IPS.search(line)
        if total is None and per_device is None:
            return None
        if total is not None:
            throughput = to_float(total.group(1))
            unit_text = total.group(2)
        else:
            throughput = self.scaled(to_float(per_device.group(1)))
            unit_text = per_device.group(2)
        self.unit = normalise_unit(unit_text, self.unit)
        loss = _LOSS.search(line)
        lr = _LR.search(line)
        cost = _BATCH_COST.search(line)
        samples = _AVG_SAMPLES.search(line)
        self.memory(line)
        if samples is not None:
            self.meta.setdefault("batch_size", int(float(samples.group(1))))
        return self.record(
            step=int(step_match.group(1)) if step_match else None,
            throughput=throughput,
            step_time_s=to_float(cost.group(1)) if cost else None,
            loss=to_float(loss.group(1)) if loss else None,
            learning_rate=to_float(lr.group(1)) if lr else None,
        )


class PaddleNLPFormat(LogFormat):
    name = "paddlenlp"
    description = ("PaddleNLP / PaddleFleetX step lines: 'global step', 'total step', "
                   "'tobal step', '[train]' with ips / ips_total")
    unit = "samples/s"
    framework = "paddle"
    default_method = "trimmed"

    def detect(self, line: str) -> bool:
        if not _is_nlp_step_line(line):
            return False
        if not (_IPS.search(line) or _IPS_TOTAL.search(line)):
            return False
        return bool(_NLP_STEP.search(line)) or "[train]" in line

    def new_parser(self, **hints: Any) -> PaddleNLPParser:
        return PaddleNLPParser(**hints)


# --------------------------------------------------------------------------- PaddleClas

_CLAS_STATIC = re.compile(r"\bepoch:\s*(\d+)\s+train step:\s*(\d+)")
_CLAS_DYNAMIC = re.compile(r"\[Train\]\[Epoch (\d+)/(\d+)\]\[Iter:\s*(\d+)/(\d+)\]")


def _is_clas_step_line(line: str) -> bool:
    return "ips:" in line and ("train step" in line or "[Train][Epoch" in line)


class PaddleClasParser(_PaddleParser):
    format_name = "paddleclas"
    default_unit = "images/s"

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
        static = _CLAS_STATIC.search(line)
        dynamic = None if static else _CLAS_DYNAMIC.search(line)
        ips = _IPS.search(line)
        if ips is None or (static is None and dynamic is None):
            return None
        if static:
            epoch, step = int(static.group(1)), int(static.group(2))
        else:
            epoch, step = int(dynamic.group(1)), int(dynamic.group(3))
            self.meta["epochs"] = int(dynamic.group(2))
            self.meta["steps_per_epoch"] = int(dynamic.group(4))
        # Steps restart every epoch; a running offset keeps them increasing.
        if self._last_epoch is not None and epoch != self._last_epoch:
            self._epoch_offset = self._last_step
        self._last_epoch = epoch
        global_step = self._epoch_offset + step
        self._last_step = global_step
        self.unit = normalise_unit(ips.group(2), self.unit)
        loss = _LOSS.search(line)
        lr = _LR.search(line)
        cost = _BATCH_COST.search(line)
        self.memory(line)
        return self.record(
            step=global_step,
            throughput=self.scaled(to_float(ips.group(1))),
            step_time_s=to_float(cost.group(1)) if cost else None,
            loss=to_float(loss.group(1)) if loss else None,
            learning_rate=to_float(lr.group(1)) if lr else None,
        )


class PaddleClasFormat(LogFormat):
    name = "paddleclas"
    description = "PaddleClas step lines: 'epoch:E train step:S ... ips: X samples/sec' or '[Train][Epoch ..]'"
    unit = "images/s"
    framework = "paddle"
    default_method = "trimmed"

    def detect(self, line: str) -> bool:
        return _is_clas_step_line(line) and bool(
            (_CLAS_STATIC.search(line) or _CLAS_DYNAMIC.search(line)) and _IPS.search(line)
        )

    def new_parser(self, **hints: Any) -> PaddleClasParser:
        return PaddleClasParser(**hints)
