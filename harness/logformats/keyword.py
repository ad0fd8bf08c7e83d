"""Generic keyword mode: what the seed repositories' ``analysis.py`` did, for any log.

Every line containing ``keyword`` gives one record: the whitespace- (or ``separator``-)
separated token right after the token equal to ``keyword`` (or the token at ``position``).
``model_mode`` says what the record is, as in ``analysis.py``:

====  =======================  ==========================================
mode  record is                FINAL_RESULT
====  =======================  ==========================================
-1    throughput per device    mean x gpus, unit given by ``ips_unit``
     (``keyword_scope=global``: the job's throughput, taken as printed)
0     seconds per step         batch x gpus / mean  (samples/s)
1     steps per second         mean                 (steps/s)
2     seconds per step         1 / mean             (steps/s)
3     steps per second         batch x gpus x mean  (samples/s)
4     seconds per epoch        mean                 (s/epoch)
====  =======================  ==========================================

``analysis.py`` averages the records after ``skip_steps`` first and converts the mean
(method ``analysis-py``, this format's default); ``time_unit="ms"`` reads time records
written in milliseconds.
"""

from __future__ import annotations

from typing import Any

from harness.errors import UserInputError
from harness.logformat import LogFormat
from harness.logparse.recorder import PER_DEVICE, TOTAL, RecordingParser, to_float
from harness.models import StepRecord

MODES = (-1, 0, 1, 2, 3, 4)
TIME_MODES = (0, 2, 4)
TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


class KeywordParser(RecordingParser):
    def __init__(self, keyword: str | None = None, model_mode: int = -1,
                 base_batch_size: int | None = None, time_unit: str = "s",
                 ips_unit: str | None = None, separator: str | None = None,
                 position: int | None = None, keyword_scope: str = "per-gpu", **hints: Any):
        super().__init__(**hints)
        if not keyword:
            raise UserInputError("keyword mode needs --keyword: the text that precedes each value")
        if model_mode not in MODES:
            raise UserInputError(f"--model-mode {model_mode} is not one of {', '.join(map(str, MODES))}")
        if time_unit not in TIME_UNITS:
            raise UserInputError(f"--time-unit {time_unit!r} is not one of {', '.join(TIME_UNITS)}")
        self.batch_size = base_batch_size or self.batch_size
        if model_mode in (0, 3) and not self.batch_size:
            raise UserInputError(f"--model-mode {model_mode} converts steps to samples: give --base-batch-size")
        self.keyword = keyword
        self.mode = model_mode
        self.time_scale = TIME_UNITS[time_unit]
        self.separator = separator
        self.position = position
        self.unit = {-1: ips_unit or "samples/s", 0: "samples/s", 1: "steps/s", 2: "steps/s",
                     3: "samples/s", 4: "s/epoch"}[model_mode]
        if keyword_scope not in ("per-gpu", "global"):
            raise UserInputError(f"--keyword-scope {keyword_scope!r} is not one of per-gpu, global")
        # Mode -1 values are per GPU by default (analysis.py multiplies them by the GPU count);
        # logs that print the job's total say --keyword-scope global and are taken as printed.
        self.global_values = keyword_scope == "global"
        self.scope = PER_DEVICE if model_mode == -1 and not self.global_values else TOTAL
        self.meta.update(keyword=keyword, keyword_mode=model_mode, keyword_scope=keyword_scope)

    def _token(self, line: str) -> str | None:
        words = line.strip().split(self.separator) if self.separator else line.split()
        if self.position is not None:
            return words[self.position] if -len(words) <= self.position < len(words) else None
        for index in range(len(words) - 1):
            if words[index] == self.keyword:
                return words[index + 1]
        # Also accept the keyword glued to its value ("ips:123.4"), which analysis.py missed.
        for word in words:
            if word.startswith(self.keyword) and len(word) > len(self.keyword):
                return word[len(self.keyword):]
        return None

    def feed(self, line: str) -> StepRecord | None:
        if self.keyword not in line:
            self.check_failure(line)
            return None
        token = self._token(line)
        value = to_float(token.strip(",;")) if token else None
        if value is None:
            return None
        gpus = self.gpus or 1
        if self.mode in TIME_MODES:
            seconds = value * self.time_scale if self.mode != 4 else value
            throughput = {0: (self.batch_size or 0) * gpus / seconds if seconds else None,
                          2: 1.0 / seconds if seconds else None,
                          4: seconds}[self.mode]
            return self.record(step_time_s=seconds if self.mode != 4 else None,
                               throughput=throughput)
        if self.mode == 3:
            return self.record(throughput=(self.batch_size or 0) * gpus * value)
        if self.mode == -1:
            return self.record(throughput=value if self.global_values else self.scaled(value))
        return self.record(throughput=value)


class KeywordFormat(LogFormat, name="keyword", default_method="analysis-py", parser=KeywordParser):
    """Generic keyword mode of the seeds' analysis.py (--keyword, --model-mode, ...); never
    auto-detected"""

    def detect(self, line: str) -> bool:
        return False  # only chosen explicitly: any keyword would match too much
