"""MXNet ecosystem log formats: gluon-cv / MXNet Speedometer lines and NGC MXNet ResNet.

gluon-cv ``train_imagenet.py`` (and ``mx.callback.Speedometer``) print the throughput of the
whole process, i.e. of all the GPUs it drives::

    Epoch[0] Batch [49]\tSpeed: 1234.567890 samples/sec\taccuracy=0.001000\tlr=0.100000
    Epoch[0] Batch [49]\tSpeed: 1234.56 samples/sec\tloss=6.9\tlr=0.1\tstep_time_s=0.103700   (harness's script)
    Epoch[0] Batch [20-40]\tSpeed: 1234.56 samples/sec\taccuracy=0.001000
    [Epoch 0] training: accuracy=0.012345
    [Epoch 0] speed: 1234 samples/sec\ttime cost: 1036.123456
    Epoch[0] Time cost=1036.123

Other gluon-cv scripts print other layouts, each recognised on its own (a log may hold only
per-epoch lines, as the action-recognition scripts print):

    Epoch[136]\t\tSpeed: 1215 samples/sec over 122 secs\tloss=0.000350     (pose: per epoch)
    [Epoch 198][Batch 99], LR: 1.00E-05, Speed: 181.084 samples/sec, ObjLoss=8.454, ...   (detection)
    [Epoch 0] speed: 141 samples/sec\ttime cost: 26.926219                  (per epoch)

gluon-cv's CIFAR scripts (``scripts/classification/cifar/train_cifar10.py`` and its mixup
variant) print no speed at all, only each epoch's wall time, validation included::

    INFO:root:Namespace(batch_size=128, ..., model='cifar_resnet20_v1', ..., num_gpus=1, ...)
    INFO:root:[Epoch 0] train=0.467608 val=0.558900 loss=1.452417 time: 16.450441

Their epoch trains CIFAR's 50000 training images in batches of ``batch_size x num_gpus``
with ``last_batch='discard'``: 50000 // batch x batch samples, the epoch's record.

Per-epoch lines are the epochs' own figures (``harmonic-epoch``); where a log has no batch
lines they are also its records. An epoch record ends at the epoch's last iteration where the
log states the epoch's size (the action-recognition scripts print ``Load 3570 training samples
...`` and ``Total batch size is set to 256 on 8 GPUs``: floor(3570 / 256) = 13 iterations, the
fewest an epoch can have), so the warm-up (in iterations) skips whole epochs only as far as it
reaches; otherwise each epoch counts as one iteration. gluon-cv's
``Namespace(num_gpus=8, batch_size=32, ...)`` states the GPU count and the per-GPU batch size.

NGC MXNet ResNet-50 (DLLogger, ``[1,0]<stdout>:`` prefixes) prints per-interval and per-epoch
``train.ips``; NVIDIA's benchmark.py reports the harmonic mean of the per-epoch figures after
one warm-up epoch (``harmonic-epoch``, the default method here)::

    DLL 2023-07-31 09:00:53.060273 - Epoch: 0 Iteration: 19  train.loss : 7.10  train.ips : 265.8 images/s train.lr : 0.0019
    DLL 2023-07-31 09:03:30.387844 - Epoch: 0  train.loss : 6.82  train.ips : 390.38 images/s
    DLL 2023-07-31 09:08:59.354289 - Summary: train.loss : 6.30  train.ips : 389.82 images/s
"""

from __future__ import annotations

import re
from typing import Any

from harness.logformat import LogFormat
from harness.logparse.dllogger import parse_dll_line
from harness.logparse.recorder import RecordingParser, normalise_unit, to_float
from harness.models import StepRecord

_NUM = r"([-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|nan|inf))"

# --------------------------------------------------------------------------- gluon-cv

_BATCH = re.compile(r"Epoch\[(\d+)\] Batch \[(?:\d+-)?(\d+)\]\s+Speed:\s*" + _NUM + r"\s*(\S+/sec|\S+/s)")
_METRIC = re.compile(r"\t([A-Za-z][\w-]*)=" + _NUM)
_EPOCH_SPEED = re.compile(r"\[Epoch (\d+)\] speed:\s*" + _NUM + r"\s*(\S+/sec|\S+/s)")
_EPOCH_OVER = re.compile(r"Epoch\[(\d+)\]\s+Speed:\s*" + _NUM + r"\s*(\S+/sec|\S+/s) over ([\d.]+) secs")
_DETECTION = re.compile(r"\[Epoch (\d+)\]\[Batch (\d+)\],(?: LR: ([^,]+),)? Speed:\s*" + _NUM
                        + r"\s*(\S+/sec|\S+/s)")
_DETECTION_METRIC = re.compile(r",\s*([A-Za-z][\w-]*)=" + _NUM)
_TIME_COST = re.compile(r"time cost\s*[:=]\s*" + _NUM)
_EPOCH_TIME = re.compile(r"(?:\[Epoch (\d+)\]|Epoch\[(\d+)\]) (?:time cost|Time cost)\s*[:=]\s*" + _NUM)
_CIFAR_EPOCH = re.compile(r"\[Epoch (\d+)\] train=\S+ val=\S+ loss=" + _NUM + r" time: " + _NUM)
_NAMESPACE_INT = re.compile(r"\b(batch_size|num_gpus)=(\d+)")
#: CIFAR-10's (and CIFAR-100's) training set: the images one epoch of gluon-cv's CIFAR scripts reads.
CIFAR_TRAIN_IMAGES = 50000
_TRAIN_SAMPLES = re.compile(r"\bLoad (\d+) training samples")
_TOTAL_BATCH = re.compile(r"\bTotal batch size is set to (\d+)")


class GluonCVParser(RecordingParser):
    def __init__(self, **hints: Any):
        super().__init__(**hints)
        self._epoch_offset = 0
        self._last_epoch: int | None = None
        self._last_step = 0
        self.epoch_throughput: list[float] = []
        self._epoch_records: list[tuple[int, float, float | None]] = []  # (epoch, speed, seconds)
        self._batch_records = 0
        self._train_samples: int | None = None  # the epoch's size, where the log states it
        self._total_batch: int | None = None
        self._namespace: dict[str, int] = {}

    def feed(self, line: str) -> StepRecord | None:
        if "time:" in line and "] train=" in line:
            match = _CIFAR_EPOCH.search(line)
            if match:
                return self._cifar_epoch(int(match.group(1)), to_float(match.group(2)), to_float(match.group(3)))
        if "Namespace(" in line and not self._namespace:
            self._namespace = {key: int(value) for key, value in _NAMESPACE_INT.findall(line)}
        if "Speed:" in line:
            match = _BATCH.search(line)
            if match:
                return self._batch(line, match)
            match = _DETECTION.search(line) if "[Batch" in line else None
            if match:
                return self._detection(line, match)
            match = _EPOCH_OVER.search(line)
            if match:
                self._epoch(int(match.group(1)), to_float(match.group(2)), match.group(3),
                            to_float(match.group(4)))
                return None
        if "Epoch" in line:
            match = _EPOCH_SPEED.search(line) if "speed:" in line else None
            if match:
                time_cost = _TIME_COST.search(line)
                self._epoch(int(match.group(1)), to_float(match.group(2)), match.group(3),
                            to_float(time_cost.group(1)) if time_cost else None)
                return None
        if self._train_samples is None and "Load " in line:
            match = _TRAIN_SAMPLES.search(line)
            if match:
                self._train_samples = int(match.group(1))
        elif self._total_batch is None and "Total batch" in line:
            match = _TOTAL_BATCH.search(line)
            if match:
                self._total_batch = int(match.group(1))
        self.check_other_line(line)  # the harness script's own peak line: process max RSS
        return None

    def _cifar_epoch(self, epoch: int, loss: float | None, seconds: float | None) -> StepRecord | None:
        """A CIFAR epoch: the samples train_cifar10.py trains in it / its printed time."""
        batch = self._namespace.get("batch_size")
        if not batch or not seconds:
            return None
        total_batch = batch * max(1, self._namespace.get("num_gpus", 1))
        per_epoch = CIFAR_TRAIN_IMAGES // total_batch
        samples = per_epoch * total_batch
        self._batch_records += 1
        self.meta["throughput_records"] = "CIFAR epochs (50000 // batch x batch samples / epoch time)"
        self.meta["samples_from"] = (f"CIFAR's {CIFAR_TRAIN_IMAGES} training images in whole batches of "
                                     f"{total_batch} ({batch} x {max(1, self._namespace.get('num_gpus', 1))} GPUs)")
        self.meta["iterations_per_epoch"] = per_epoch
        return self.record(step=(epoch + 1) * per_epoch, throughput=samples / seconds, step_time_s=seconds,
                           samples=samples, loss=loss)

    def _epoch(self, epoch: int, value: float | None, unit: str, seconds: float | None) -> None:
        if value is None:
            return
        self.epoch_throughput.append(value)
        self._epoch_records.append((epoch, value, seconds))
        self.framework_reported = value  # gluon-cv prints no run summary: its last epoch's speed
        self.meta["framework_field"] = "speed of the last epoch line"
        self.unit = normalise_unit(unit, self.unit)

    def _detection(self, line: str, match: re.Match) -> StepRecord:
        epoch, batch = int(match.group(1)), int(match.group(2))
        step = self._step(epoch, batch)
        self.unit = normalise_unit(match.group(5), self.unit)
        metrics = {k.lower(): to_float(v) for k, v in _DETECTION_METRIC.findall(line)}
        loss = next((v for k, v in metrics.items() if "loss" in k or k in ("crossentropy", "smoothl1")), None)
        self._batch_records += 1
        return self.record(step=step, throughput=to_float(match.group(4)), loss=loss,
                           learning_rate=to_float(match.group(3)) if match.group(3) else None)

    def _step(self, epoch: int, batch: int) -> int:
        """Batches restart every epoch: count iterations on from the previous epochs."""
        if self._last_epoch is not None and epoch != self._last_epoch:
            self._epoch_offset = self._last_step + 1
        self._last_epoch = epoch
        self._last_step = self._epoch_offset + batch
        return self._last_step

    def _batch(self, line: str, match: re.Match) -> StepRecord:
        epoch, batch = int(match.group(1)), int(match.group(2))
        self._batch_records += 1
        if self._last_epoch is not None and epoch != self._last_epoch:
            self._epoch_offset = self._last_step
        self._last_epoch = epoch
        # gluon-cv numbers batches from 0 within each epoch; a step counts the batches done.
        step = self._epoch_offset + batch + 1
        self._last_step = step
        self.unit = normalise_unit(match.group(4), self.unit)
        metrics = {k.lower(): to_float(v) for k, v in _METRIC.findall(line)}
        loss = next((v for k, v in metrics.items() if "loss" in k), None)
        return self.record(
            step=step,
            throughput=to_float(match.group(3)),
            loss=loss,
            learning_rate=metrics.get("lr"),
            step_time_s=metrics.get("step_time_s"),
        )

    def finish(self):
        if self.epoch_throughput:
            self.meta["epoch_throughput"] = self.epoch_throughput
        if self._batch_records == 0 and self._epoch_records:
            # Only per-epoch lines: the epochs are the records, each ending at the epoch's last
            # iteration (one iteration per epoch where the log does not state the epoch's size).
            self.meta["throughput_records"] = "per-epoch speed lines"
            per_epoch = self._iterations_per_epoch()
            for epoch, value, seconds in self._epoch_records:
                self.record(step=(epoch + 1) * per_epoch, throughput=value, step_time_s=seconds)
        return super().finish()

    def _iterations_per_epoch(self) -> int:
        if self._train_samples and self._total_batch:
            # floor: the fewest iterations the epoch can have (a last partial batch may be
            # dropped), so the warm-up never reaches less far than it should.
            per_epoch = max(1, self._train_samples // self._total_batch)
            self.meta["iterations_per_epoch"] = per_epoch
            self.meta["iterations_per_epoch_from"] = (
                f"{self._train_samples} training samples / total batch {self._total_batch}")
            return per_epoch
        return 1


class GluonCVFormat(LogFormat, name="gluoncv", unit="samples/s", framework="mxnet",
                    default_method="harness", parser=GluonCVParser):
    """gluon-cv / MXNet Speedometer: 'Epoch[E] Batch [B]\\tSpeed: S samples/sec', detection
    '[Epoch E][Batch B], ... Speed: S samples/sec', per-epoch speed lines, CIFAR
    '[Epoch E] train=A val=B loss=L time: T' epochs"""

    def detect(self, line: str) -> bool:
        if "Speed:" in line:
            return bool(_BATCH.search(line) or _DETECTION.search(line) or _EPOCH_OVER.search(line))
        if "] train=" in line and "time:" in line:
            return bool(_CIFAR_EPOCH.search(line))
        return "speed:" in line and "[Epoch" in line and bool(_EPOCH_SPEED.search(line))


# --------------------------------------------------------------------------- NGC MXNet ResNet

_GPU_LIST = re.compile(r"\bgpus : \[([\d, ]*)\]")


class MXNetDLEParser(RecordingParser):
    def __init__(self, **hints: Any):
        super().__init__(**hints)
        self.epoch_throughput: list[float] = []
        self._steps_per_epoch: int | None = None
        self.meta["end_marker"] = "the DLLogger Summary line"

    def feed(self, line: str) -> StepRecord | None:
        if "DLL" in line:
            if "PARAMETER" in line and "gpus : [" in line:
                listed = _GPU_LIST.search(line)
                if listed:
                    self.meta["gpus"] = len([g for g in listed.group(1).split(",") if g.strip()])
            rec = parse_dll_line(line)
            if rec is not None:
                return self._dll(rec)
            return None
        self.check_failure(line)
        return None

    def _dll(self, rec) -> StepRecord | None:
        if rec.kind == "parameter":
            self.meta.update(rec.whole_numbers({"batch_size": "global_batch_size", "num_epochs": "epochs"}))
            return None
        ips = rec.number("train.ips")
        if ips is None:
            return None
        if "train.ips" in rec.units:
            self.unit = normalise_unit(rec.units["train.ips"], self.unit)
        if rec.kind == "summary":
            self.note_summary(ips, "Summary train.ips")
            return None
        if rec.kind == "epoch":
            self.epoch_throughput.append(ips)
            return None
        if rec.kind != "step":
            return None
        iteration = rec.iteration or 0
        if rec.epoch:
            # Iterations restart every epoch: count them on from the previous epochs.
            if self._steps_per_epoch is None or iteration + 1 > self._steps_per_epoch:
                self._steps_per_epoch = max(self._steps_per_epoch or 0, iteration + 1)
            step = rec.epoch * (self._steps_per_epoch or 0) + iteration + 1
        else:
            self._steps_per_epoch = max(self._steps_per_epoch or 0, iteration + 1)
            step = iteration + 1
        return self.record(step=step, throughput=ips, loss=rec.number("train.loss"),
                           learning_rate=rec.number("train.lr"))

    def finish(self):
        if self.epoch_throughput:
            self.meta["epoch_throughput"] = self.epoch_throughput
        return super().finish()


class MXNetDLEFormat(LogFormat, name="mxnet_dle", unit="images/s", framework="mxnet",
                     default_method="harmonic-epoch", parser=MXNetDLEParser):
    """NGC MXNet ResNet-50 DLLogger lines with train.ips per interval and per epoch"""

    def detect(self, line: str) -> bool:
        if "train.ips" not in line:
            return False
        rec = parse_dll_line(line)
        return rec is not None and "train.ips" in rec.fields
