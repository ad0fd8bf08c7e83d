"""FlagPerf training-event lines: ``[PerfLog] {json}``.

FlagPerf's ``training_event`` loggers print one JSON object per event::

    [PerfLog] {"event": "STEP_END", "value": {"loss": 10.4, "epoch": 1, "global_steps": 10,
        "num_trained_samples": 10240, "learning_rate": 4e-05, "seq/s": 1000.1},
        "metadata": {"file": "run_pretraining.py", "lineno": 100, "time_ms": 1661936015871}}
    [PerfLog] {"event": "FINISHED", "value": {"e2e_time": 1234.5, "training_sequences_per_second":
        3456.7, "converged": true, "final_loss": 2.1, "raw_train_time": 1100.2}, ...}

The throughput of a step is the value whose key is a rate (``seq/s``, ``samples/s``,
``tokens/s``, ``*_per_second``, ``throughput``); the FINISHED event's rate is the
framework's own figure.
"""

from __future__ import annotations

from typing import Any

from harness.logformat import LogFormat
from harness.logparse.recorder import RecordingParser, normalise_unit
from harness.models import StepRecord

MARKER = "[PerfLog]"
_STEP_KEYS = ("global_steps", "global_step", "step", "iteration")
_LOSS_KEYS = ("loss", "train_loss", "lm_loss", "final_loss")
_LR_KEYS = ("learning_rate", "lr")
_PER_SECOND_UNITS = {
    "sequences": "sequences/s", "samples": "samples/s", "images": "images/s", "tokens": "tokens/s",
}


def rate_of(values: dict[str, Any]) -> tuple[float, str | None, str] | None:
    """The (value, unit, key) of the first throughput-like entry of a PerfLog value dict."""
    for key, value in values.items():
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        lowered = key.lower()
        if lowered.endswith("/s") or lowered.endswith("/sec"):
            return float(value), normalise_unit(lowered), key
        if "per_second" in lowered:
            noun = next((u for n, u in _PER_SECOND_UNITS.items() if n in lowered), "samples/s")
            return float(value), noun, key
        if lowered in ("throughput", "ips", "tps", "avg_ips"):
            return float(value), None, key
    return None


def _first(values: dict[str, Any], keys: tuple[str, ...]) -> float | None:
    for key in keys:
        value = values.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
    return None


class FlagPerfParser(RecordingParser):
    def feed(self, line: str) -> StepRecord | None:
        event = self.marked_json(line, MARKER)
        if event is None:
            return None
        name = str(event.get("event", ""))
        values = event.get("value")
        if not isinstance(values, dict):
            return None
        rate = rate_of(values)
        if name == "FINISHED" or name == "TRAIN_END":
            self.meta["run_complete"] = True
            if rate:
                self.framework_reported = rate[0]
                self.meta["framework_field"] = f"{name} {rate[2]}"
                self.unit = rate[1] or self.unit
            if values.get("converged") is False:
                self.meta["converged"] = False
            return None
        if name in ("INIT_END", "SUBMITTED", "LAUNCH_TRAINING") or not name.startswith("STEP"):
            for key in ("train_batch_size", "global_batch_size", "batch_size"):
                if isinstance(values.get(key), int):
                    self.meta.setdefault("batch_size", values[key])
            return None
        if name != "STEP_END":
            return None
        step = _first(values, _STEP_KEYS)
        if rate:
            self.unit = rate[1] or self.unit
        return self.record(
            step=int(step) if step is not None else None,
            throughput=rate[0] if rate else None,
            loss=_first(values, _LOSS_KEYS),
            learning_rate=_first(values, _LR_KEYS),
        )


class FlagPerfFormat(LogFormat, name="flagperf", unit="samples/s", default_method="harness",
                     parser=FlagPerfParser):
    """FlagPerf '[PerfLog] {json}' training events (STEP_END rates, FINISHED summary)"""

    def detect(self, line: str) -> bool:
        return MARKER in line and '"event"' in line
