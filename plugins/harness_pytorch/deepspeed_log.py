"""DeepSpeed ``ThroughputTimer`` lines (``deepspeed/utils/timer.py``), printed by any script that
trains through a DeepSpeed engine (Hugging Face + DeepSpeed, DeepSpeed-Chat, Megatron-DeepSpeed).

Every ``steps_per_print`` steps the engine's timer logs, in DeepSpeed up to 0.8::

    [2022-11-22 10:03:37,042] [INFO] [timer.py:198:stop] 0/200, RunningAvgSamplesPerSec=90.31,
        CurrSamplesPerSec=82.74, MemAllocated=0.72GB, MaxMemAllocated=7.0GB

and in later releases ``epoch=0/micro_step=400/global_step=200, RunningAvgSamplesPerSec=...``.
``CurrSamplesPerSec`` is the speed of the step just timed; ``RunningAvgSamplesPerSec`` is
DeepSpeed's own average over every step since its timer's warm-up (``start_step``), so the
last one printed is the framework's figure for the run (``--method framework``). Both count
the samples of the whole job (the timer's batch is the global batch), so the figures are
totals, never scaled by a GPU count. The step is ``global_step`` where printed, else the
timer's own count after the slash.

Runs started by the ``deepspeed`` launcher end with its ``Process N exits successfully`` line;
when the log shows the launcher, a log without that line is reported as truncated.
"""

from __future__ import annotations

import re
from typing import Any

from harness.logformat import LogFormat
from harness.logparse.recorder import RecordingParser, memory_bytes, number_after, to_float
from harness.models import StepRecord

_TIMER = re.compile(
    r"(?:epoch=)?(\d+)/(?:micro_step=)?(\d+)(?:/global_step=(\d+))?,\s*"
    r"RunningAvgSamplesPerSec=([-+\w.]+),\s*CurrSamplesPerSec=([-+\w.]+)")
FRAMEWORK_FIELD = "RunningAvgSamplesPerSec"


class DeepSpeedTimerParser(RecordingParser):
    def __init__(self, **hints: Any):
        super().__init__(**hints)
        self._last_count = 0  # the timer's count of the previous line (it restarts per epoch)
        self._offset = 0

    def feed(self, line: str) -> StepRecord | None:
        if "SamplesPerSec=" in line:
            return self._timer_line(line)
        if "[launch.py:" in line or "[runner.py:" in line:
            self.meta["end_marker"] = "the DeepSpeed launcher's 'Process N exits successfully' line"
            if "exits successfully" in line:
                self.meta["run_complete"] = True
            elif "exits with return code" in line:
                self.error(line.strip())
            return None
        self.check_failure(line)
        return None

    def _timer_line(self, line: str) -> StepRecord | None:
        match = _TIMER.search(line)
        if match is None:
            return None
        _epoch, count, global_step, running, current = match.groups()
        running_value, current_value = to_float(running), to_float(current)
        if current_value is None:
            return None
        if global_step is not None:
            step = int(global_step)
        else:
            count_value = int(count)
            if count_value < self._last_count:  # a new epoch restarted the timer's count
                self._offset += self._last_count
            self._last_count = count_value
            step = self._offset + count_value
        if running_value is not None and running_value > 0:
            self.framework_reported = running_value
            self.meta["framework_field"] = FRAMEWORK_FIELD
        peak, unit = number_after(line, "MaxMemAllocated=")
        if peak is not None:
            self.note_memory(memory_bytes(peak, unit or "GB"))
        return self.record(step=step, throughput=current_value)


class DeepSpeedTimerFormat(LogFormat, name="deepspeed", unit="samples/s", framework="pytorch",
                           default_method="harness", parser=DeepSpeedTimerParser):
    """DeepSpeed ThroughputTimer: 'E/N, RunningAvgSamplesPerSec=X, CurrSamplesPerSec=Y' (or
    'epoch=E/micro_step=M/global_step=G, ...'); whole-job samples/s; --method framework takes
    the last RunningAvgSamplesPerSec"""

    def detect(self, line: str) -> bool:
        return "CurrSamplesPerSec=" in line and _TIMER.search(line) is not None
