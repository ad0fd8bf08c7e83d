"""MLPerf training logs: ``:::MLLOG {json}`` lines (mlperf-logging).

::

    :::MLLOG {"namespace": "", "time_ms": 1593998543658, "event_type": "POINT_IN_TIME",
        "key": "global_batch_size", "value": 2048, "metadata": {"file": "train.py", "lineno": 80}}
    :::MLLOG {..., "key": "tracked_stats", "value": {"throughput": 2345.6},
        "metadata": {"step": 100, ...}}
    :::MLLOG {..., "event_type": "INTERVAL_START", "key": "epoch_start", "metadata": {"epoch_num": 1}}
    :::MLLOG {..., "event_type": "INTERVAL_END", "key": "epoch_stop", "metadata": {"epoch_num": 1}}
    :::MLLOG {..., "key": "run_stop", "metadata": {"status": "success"}}

Steps come from ``tracked_stats`` / ``throughput`` entries; where a submission logs none,
each epoch (or block) becomes a step with throughput = samples / interval time, using
``train_samples`` (samples per epoch) and ``global_batch_size``. ``run_stop`` with a status
other than ``success`` marks the run failed.
"""

from __future__ import annotations

from typing import Any

from harness.logformat import LogFormat
from harness.logparse.recorder import RecordingParser
from harness.models import StepRecord

MARKER = ":::MLLOG"


class MLLogParser(RecordingParser):
    format_name = "mllog"
    default_unit = "samples/s"

    def __init__(self, **hints: Any):
        super().__init__(**hints)
        self._interval_start: dict[str, float] = {}
        self._samples_per_epoch: float | None = None
        self._last_loss: float | None = None
        self._tracked = False

    def feed(self, line: str) -> StepRecord | None:
        entry = self.marked_json(line, MARKER)
        if entry is None:
            return None
        key = entry.get("key")
        value = entry.get("value")
        metadata = entry.get("metadata") if isinstance(entry.get("metadata"), dict) else {}
        time_ms = entry.get("time_ms")
        if key == "global_batch_size" and isinstance(value, (int, float)):
            self.meta["global_batch_size"] = int(value)
        elif key == "train_samples" and isinstance(value, (int, float)):
            self._samples_per_epoch = float(value)
            self.meta["train_samples"] = int(value)
        elif key in ("opt_base_learning_rate", "opt_learning_rate"):
            self.meta["learning_rate"] = value
        elif key in ("train_loss", "loss") and isinstance(value, (int, float)):
            self._last_loss = float(value)
        elif key == "submission_benchmark":
            self.meta["benchmark"] = value
        elif key == "run_stop":
            status = metadata.get("status")
            self.meta["run_status"] = status
            if status not in (None, "success"):
                self.error(f"MLPerf run_stop status: {status}")
        elif key in ("tracked_stats", "throughput"):
            return self._tracked_stats(value, metadata)
        elif key in ("epoch_start", "block_start") and isinstance(time_ms, (int, float)):
            self._interval_start[key[:-6]] = float(time_ms)
        elif key in ("epoch_stop", "block_stop") and isinstance(time_ms, (int, float)):
            return self._interval(key[:-5], float(time_ms), metadata)
        return None

    def _tracked_stats(self, value: Any, metadata: dict) -> StepRecord | None:
        if isinstance(value, dict):
            throughput = value.get("throughput")
            loss = value.get("loss", value.get("train_loss"))
        else:
            throughput, loss = value, None
        if not isinstance(throughput, (int, float)):
            return None
        self._tracked = True
        step = metadata.get("step", metadata.get("epoch_num"))
        return self.record(step=int(step) if isinstance(step, (int, float)) else None,
                           throughput=float(throughput),
                           loss=float(loss) if isinstance(loss, (int, float)) else self._last_loss)

    def _interval(self, kind: str, end_ms: float, metadata: dict) -> StepRecord | None:
        started = self._interval_start.pop(kind, None)
        if self._tracked or started is None or not self._samples_per_epoch or end_ms <= started:
            return None
        epochs = metadata.get("epoch_count", 1) if kind == "block" else 1
        seconds = (end_ms - started) / 1000.0
        samples = self._samples_per_epoch * float(epochs or 1)
        number = metadata.get("first_epoch_num", metadata.get("epoch_num"))
        return self.record(step=int(number) if isinstance(number, (int, float)) else None,
                           step_time_s=seconds, throughput=samples / seconds,
                           samples=int(samples), loss=self._last_loss)


class MLLogFormat(LogFormat):
    name = "mllog"
    description = "MLPerf ':::MLLOG {json}' lines (tracked_stats throughput, or epoch/block intervals)"
    unit = "samples/s"
    default_method = "harness"

    def detect(self, line: str) -> bool:
        return MARKER in line and '"key"' in line

    def new_parser(self, **hints: Any) -> MLLogParser:
        return MLLogParser(**hints)
