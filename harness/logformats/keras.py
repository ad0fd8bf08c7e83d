"""TensorFlow 2 / Keras ``TimeHistory`` lines (the TensorFlow official models' benchmark callback).

``official.utils.misc.keras_utils.TimeHistory`` logs every ``log_steps`` steps::

    I0612 05:13:44.123 TimeHistory: 23.45 seconds, 1091.74 examples/second between steps 100 and 200

and older releases print ``BenchmarkMetric: {'global step':100, 'time_taken': 23.4,
'examples_per_second': 1091.7}``. Each line is one record ending at its last step, so the
warm-up is counted in steps. At the end the models print their run statistics, whose
``avg_exp_per_second`` (``Run stats: {... 'avg_exp_per_second': 1093.2, ...}``) is the
framework's own figure. The figures are the whole job's (Keras runs one process for all the
GPUs of a distribution strategy).
"""

from __future__ import annotations

import re

from harness.logformat import LogFormat
from harness.logparse.recorder import RecordingParser
from harness.models import StepRecord

_TIME_HISTORY = re.compile(
    r"TimeHistory: ([\d.]+) seconds, ([\d.]+) examples/second between steps (\d+) and (\d+)")
_BENCHMARK_METRIC = re.compile(
    r"BenchmarkMetric: \{'global step':\s*(\d+),\s*'time_taken':\s*([\d.]+),\s*'examples_per_second':\s*([\d.]+)\}")
_AVG = re.compile(r"'avg_exp_per_second':\s*([\d.]+(?:[eE][-+]?\d+)?)")


class KerasTimeHistoryParser(RecordingParser):
    def feed(self, line: str) -> StepRecord | None:
        if "TimeHistory:" in line:
            match = _TIME_HISTORY.search(line)
            if match:
                seconds, rate, first, last = match.groups()
                steps = int(last) - int(first)
                return self.record(step=int(last), throughput=float(rate),
                                   step_time_s=float(seconds) / steps if steps > 0 else None)
        elif "BenchmarkMetric:" in line:
            match = _BENCHMARK_METRIC.search(line)
            if match:
                return self.record(step=int(match.group(1)), throughput=float(match.group(3)))
        elif "avg_exp_per_second" in line:
            match = _AVG.search(line)
            if match:
                self.framework_reported = float(match.group(1))
                self.meta["framework_field"] = "avg_exp_per_second"
            return None
        self.check_failure(line)
        return None


class KerasTimeHistoryFormat(LogFormat, name="keras_timehistory", unit="examples/s",
                             framework="tensorflow", default_method="harness",
                             parser=KerasTimeHistoryParser):
    """TF2/Keras TimeHistory: 'TimeHistory: S seconds, X examples/second between steps A and B'
    (TensorFlow official models)"""

    def detect(self, line: str) -> bool:
        return ("TimeHistory:" in line and bool(_TIME_HISTORY.search(line))) or \
            ("BenchmarkMetric:" in line and bool(_BENCHMARK_METRIC.search(line)))
