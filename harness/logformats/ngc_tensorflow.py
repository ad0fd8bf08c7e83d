"""NGC TensorFlow log formats (DLLogger): BERT pre-training and ResNet-50.

BERT (``run_pretraining.py``): one line per iteration with the job's ``throughput_train``;
fp16 runs repeat ``Iteration: 1`` while the loss scale settles; the end-of-run summary is
a DLL line without a step and a TF INFO line::

    DLL 2023-08-01 03:13:22.663597 - Iteration: 3  throughput_train : 1239.665 sequences/s
        mlm_loss : 10.5392  nsp_loss : 0.6783  total_loss : 11.2175  avg_loss_step : 11.21
        learning_rate : 3e-06
    INFO:tensorflow:Throughput Average (sentences/sec) = 1238.02
    DLL 2023-08-01 03:52:34.988283 -  throughput_train : 1238.020 sequences/s

ResNet-50 (``main.py --mode training_benchmark``): every ``display_every`` steps the job's
``total_ips``, and the final ``train_throughput``::

    DLL 2022-11-24 03:57:01.741126 - (0, 200) total_ips : 417.7218198532487
    DLL 2022-11-24 04:00:06.586395 - () train_throughput : 416.1881084364622 images/s

Both print the total of all GPUs (Horovod rank 0 reports the job).
"""

from __future__ import annotations

import re
from typing import Any

from harness.logformat import LogFormat
from harness.logparse.dllogger import parse_dll_line
from harness.logparse.recorder import RecordingParser, normalise_unit
from harness.models import StepRecord

_TF_AVERAGE = re.compile(r"Throughput Average \(sentences/sec\) = ([\d.]+)")
_BATCH = re.compile(r"\bbatch_size : (\d+)")


class TFBertParser(RecordingParser):
    def __init__(self, **hints: Any):
        super().__init__(**hints)
        self._summary_seen = False
        self.meta["end_marker"] = "the final throughput_train / Throughput Average line"

    def feed(self, line: str) -> StepRecord | None:
        if "DLL 2" in line and "throughput_train" in line:
            rec = parse_dll_line(line)
            if rec is None:
                return None
            value = rec.number("throughput_train")
            if value is None:
                return None
            self.unit = normalise_unit(rec.units.get("throughput_train"), self.unit)
            if rec.kind != "step":
                self.note_summary(value, "throughput_train (summary)")
                self._summary_seen = True
                return None
            loss = rec.number("total_loss")
            return self.record(step=rec.iteration, throughput=value, loss=loss,
                               learning_rate=rec.number("learning_rate"))
        if "Throughput Average (sentences/sec) =" in line and "overhead" not in line:
            match = _TF_AVERAGE.search(line)
            # The training average comes first; a later one is the validation pass.
            if match and not self._summary_seen:
                self.note_summary(float(match.group(1)), "Throughput Average (sentences/sec)")
                self._summary_seen = True
            return None
        self.check_failure(line)
        return None


class TFBertFormat(LogFormat, name="dllogger_tf_bert", unit="sequences/s", framework="tensorflow",
                   default_method="harness", parser=TFBertParser):
    """NGC TensorFlow BERT DLLogger lines: 'Iteration: N  throughput_train : X sequences/s'"""

    def detect(self, line: str) -> bool:
        if "DLL 2" not in line or "throughput_train" not in line:
            return False
        rec = parse_dll_line(line)
        return rec is not None and rec.kind == "step"


class TFResNetParser(RecordingParser):
    def __init__(self, **hints: Any):
        super().__init__(**hints)
        self.meta["end_marker"] = "the final train_throughput line"

    def feed(self, line: str) -> StepRecord | None:
        if "DLL 2" in line:
            if "total_ips" in line or "train_throughput" in line:
                rec = parse_dll_line(line)
                if rec is None:
                    return None
                final = rec.number("train_throughput")
                if final is not None:
                    self.note_summary(final, "train_throughput")
                    self.unit = normalise_unit(rec.units.get("train_throughput"), self.unit)
                    return None
                value = rec.number("total_ips")
                if value is not None and rec.kind == "step":
                    return self.record(step=rec.iteration, throughput=value,
                                       loss=rec.number("loss"),
                                       learning_rate=rec.number("learning_rate"))
            elif "PARAMETER" in line:
                match = _BATCH.search(line)
                if match:
                    self.meta["batch_size"] = int(match.group(1))
            return None
        self.check_failure(line)
        return None


class TFResNetFormat(LogFormat, name="tensorflow_dle", unit="images/s", framework="tensorflow",
                     default_method="harness", parser=TFResNetParser):
    """NGC TensorFlow ResNet-50 DLLogger lines: '(E, STEP) total_ips : X' and train_throughput"""

    def detect(self, line: str) -> bool:
        if "DLL 2" not in line or " total_ips :" not in line or "train." in line:
            return False
        rec = parse_dll_line(line)
        return rec is not None and rec.kind == "step"
