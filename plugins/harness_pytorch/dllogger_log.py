"""NVIDIA DLLogger log formats of the NGC PyTorch examples (BERT pre-training, ResNet-50).

BERT (``run_pretraining.py``) logs one line per optimizer step and a final summary whose
``training_sequences_per_second`` is NVIDIA's published figure (default method
``framework``)::

    DLL 2023-07-28 14:19:25.224455 - PARAMETER batch_size_per_gpu : 96
    DLL 2023-07-28 14:23:09.889653 - Training Epoch: 0 Training Iteration: 1  average_loss : 11.18
        learning_rate : 0.00105  skipped_steps : 1
    DLL 2023-07-28 15:25:07.507816 -  e2e_train_time : 428.12 s training_sequences_per_second : 5055.57
        sequences/s final_loss : 8.56 None raw_train_time : 400.44 s

Multi-node runs go through mpirun, so lines carry ``[1,0]<stdout>:`` prefixes and are often
glued behind a tqdm progress bar (``Iteration:  7%|...| 78/1147 [...]Sun May 29 ...``).
A BERT iteration line has no throughput of its own: it is derived from the timestamps of
consecutive iteration lines and the global batch (per-GPU batch x accumulation x GPUs).

ResNet-50 (``main.py``) logs per-iteration ``train.total_ips`` (data + compute) and
``train.compute_ips``; the default method is the harness mean after warm-up, and step times
come from the timestamps of consecutive iteration lines, as for BERT::

    DLL 2023-08-04 05:46:28.892809 - Epoch: 0 Iteration: 2  train.loss : 7.85750 None
        train.compute_ips : 366.98 images/s train.total_ips : 365.85 images/s train.lr : 0.1
    DLL 2023-08-04 05:47:42.970732 - Summary: train.loss : 6.43 None train.total_ips : 366.74 images/s
"""

from __future__ import annotations

import re
from typing import Any

from harness.logformat import LogFormat
from harness.logparse.dllogger import DLLRecord, parse_dll_line
from harness.logparse.recorder import RecordingParser, normalise_unit
from harness.models import StepRecord

_ACCUMULATION = re.compile(r"gradient_accumulation_steps[=\s:]+(\d+)")
_MAX_STEPS = re.compile(r"\bmax_steps[=\s:]+(\d+)")
_NPROC = re.compile(r"nproc_per_node[=\s](\d+)")
_NNODES = re.compile(r"\bnnodes[=\s](\d+)")


class _DLLParser(RecordingParser):
    """Common part: feeds DLLogger records to ``on_record``, watches failures elsewhere."""

    def __init__(self, **hints: Any):
        super().__init__(**hints)
        self._previous_time: float | None = None

    def step_time(self, rec: DLLRecord) -> float | None:
        """A step line's wall time: since the previous step line's timestamp (``None`` for the
        first, and after ``_previous_time`` was reset)."""
        seconds = rec.seconds()
        previous, self._previous_time = self._previous_time, seconds
        return seconds - previous if previous is not None else None

    def feed(self, line: str) -> StepRecord | None:
        if "DLL 2" in line:
            rec = parse_dll_line(line)
            if rec is not None:
                return self.on_record(rec, line)
            return None
        self.on_other_line(line)
        return None

    def on_record(self, rec: DLLRecord, line: str) -> StepRecord | None:
        raise NotImplementedError

    def on_other_line(self, line: str) -> None:
        # Not DLLogger: the harness scripts' own peak-memory line (NVIDIA's scripts log none).
        self.check_other_line(line)


# --------------------------------------------------------------------------- BERT


class BertDLLParser(_DLLParser):
    def __init__(self, **hints: Any):
        super().__init__(**hints)
        self._accumulation: int | None = None
        self._batch_per_gpu: int | None = self.batch_size
        self._launch_gpus: int | None = None
        self._launch_nodes: int | None = None
        self._skipped_steps = 0
        self._last_iteration: int | None = None
        self.meta["end_marker"] = "the final training_sequences_per_second line"

    def on_other_line(self, line: str) -> None:
        if "nproc_per_node" in line:
            match = _NPROC.search(line)
            if match:
                self._launch_gpus = int(match.group(1))
            match = _NNODES.search(line)
            if match:
                self._launch_nodes = int(match.group(1))
        super().on_other_line(line)

    def _gpus(self) -> int | None:
        if self.gpus:
            return self.gpus
        if self._launch_gpus:
            return self._launch_gpus * (self._launch_nodes or 1)
        return None

    def _global_batch(self) -> int | None:
        gpus = self._gpus()
        if self._batch_per_gpu and self._accumulation and gpus:
            return self._batch_per_gpu * self._accumulation * gpus
        return None

    def on_record(self, rec: DLLRecord, line: str) -> StepRecord | None:
        if rec.kind == "parameter":
            if "Config" in rec.fields or "Namespace(" in line:
                match = _ACCUMULATION.search(line)
                if match:
                    self._accumulation = int(match.group(1))
                match = _MAX_STEPS.search(line)
                if match:
                    self.meta["max_steps"] = int(match.group(1))
            batch = rec.number("batch_size_per_gpu")
            if batch is not None:
                self._batch_per_gpu = int(batch)
            return None
        final = rec.number("training_sequences_per_second")
        if final is not None:
            self.note_summary(final, "training_sequences_per_second")
            self.unit = normalise_unit(rec.units.get("training_sequences_per_second"), self.unit)
            for key in ("raw_train_time", "e2e_train_time"):
                if rec.number(key) is not None:
                    self.meta[key] = rec.number(key)
            return None
        if rec.kind != "step":
            return None
        step_time = self.step_time(rec)
        skipped = rec.number("skipped_steps")
        if skipped is not None:
            self._skipped_steps = int(skipped)
        self._last_iteration = rec.iteration
        loss = rec.number("step_loss")
        if loss is None:
            loss = rec.number("average_loss")
        if loss is None:
            loss = rec.number("final_loss")
        global_batch = self._global_batch()
        throughput = global_batch / step_time if (global_batch and step_time) else None
        return self.record(step=rec.iteration, step_time_s=step_time, throughput=throughput,
                           samples=global_batch, loss=loss,
                           learning_rate=rec.number("learning_rate"))

    def finish(self):
        gpus = self._gpus()
        if gpus:
            self.meta["gpus"] = gpus
        if self._batch_per_gpu:
            self.meta["batch_size"] = self._batch_per_gpu
        if self._accumulation:
            self.meta["gradient_accumulation_steps"] = self._accumulation
        if self._global_batch():
            self.meta["global_batch_size"] = self._global_batch()
        if self._skipped_steps:
            self.meta["skipped_steps"] = self._skipped_steps
        raw = self.meta.get("raw_train_time")
        if raw and self._global_batch() and self._last_iteration is not None:
            # NGC run_pretraining.py (2023): per-GPU batch x GPUs x (optimizer steps incl.
            # loss-scale-skipped ones x accumulation - 4 warm-up micro-steps) / raw_train_time.
            steps = self._last_iteration + self._skipped_steps
            self.meta["recomputed_throughput"] = (
                self._batch_per_gpu * gpus * (steps * self._accumulation - 4) / raw
            )
        return super().finish()


class DLLoggerFormat(LogFormat, name="dllogger", unit="sequences/s", framework="pytorch",
                     default_method="framework", parser=BertDLLParser):
    """NVIDIA DLLogger, NGC PyTorch BERT: 'Training Iteration' lines and the final
    training_sequences_per_second (MPI prefixes and tqdm garbage tolerated)"""

    def detect(self, line: str) -> bool:
        if "DLL 2" not in line or not ("Training Iteration" in line
                                        or "training_sequences_per_second" in line):
            return False
        return parse_dll_line(line) is not None


# --------------------------------------------------------------------------- ResNet-50


class ResNetDLLParser(_DLLParser):
    def __init__(self, use_compute_ips: bool = False, **hints: Any):
        super().__init__(**hints)
        self.key = "train.compute_ips" if use_compute_ips else "train.total_ips"
        self._steps_per_epoch = 0
        self.epoch_throughput: list[float] = []
        self.meta["end_marker"] = "the DLLogger Summary line"

    def on_record(self, rec: DLLRecord, line: str) -> StepRecord | None:
        if rec.kind == "parameter":
            self.meta.update(rec.whole_numbers({"batch_size": "batch_size", "epochs": "epochs"}))
            return None
        value = rec.number(self.key)
        if value is None:
            return None
        self.unit = normalise_unit(rec.units.get(self.key), self.unit)
        if rec.kind == "summary":
            self.note_summary(value, f"Summary {self.key}")
            return None
        if rec.kind == "epoch":
            self.epoch_throughput.append(value)
            # What follows an epoch (NVIDIA's validation, the next epoch's loader) is no step.
            self._previous_time = None
            return None
        if rec.kind != "step":
            return None
        iteration = rec.iteration or 0
        self._steps_per_epoch = max(self._steps_per_epoch, iteration)
        step = (rec.epoch or 0) * self._steps_per_epoch + iteration
        # The first step of the log and of each epoch has no step time.
        return self.record(step=step, step_time_s=self.step_time(rec), throughput=value,
                           loss=rec.number("train.loss"), learning_rate=rec.number("train.lr"))

    def finish(self):
        if self.epoch_throughput:
            self.meta["epoch_throughput"] = self.epoch_throughput
        self.meta["throughput_key"] = self.key
        return super().finish()


class PyTorchDLEFormat(LogFormat, name="pytorch_dle", unit="images/s", framework="pytorch",
                       default_method="harness", parser=ResNetDLLParser):
    """NVIDIA DLLogger, NGC PyTorch ResNet-50: per-iteration train.total_ips (hint
    use_compute_ips=True reads train.compute_ips)"""

    def detect(self, line: str) -> bool:
        return "DLL 2" in line and "train.total_ips" in line and parse_dll_line(line) is not None
