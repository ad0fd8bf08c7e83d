"""MLPerf training logs: ``:::MLLOG {json}`` lines (mlperf-logging).

::

    :::MLLOG {"namespace": "", "time_ms": 1593998543658, "event_type": "POINT_IN_TIME",
        "key": "global_batch_size", "value": 2048, "metadata": {"file": "train.py", "lineno": 80}}
    :::MLLOG {..., "key": "tracked_stats", "value": {"throughput": 2345.6},
        "metadata": {"step": 100, ...}}
    :::MLLOG {..., "event_type": "INTERVAL_START", "key": "epoch_start", "metadata": {"epoch_num": 1}}
    :::MLLOG {..., "event_type": "INTERVAL_END", "key": "epoch_stop", "metadata": {"epoch_num": 1}}
    :::MLLOG {..., "key": "run_stop", "metadata": {"status": "success"}}

What MLPerf publishes is the **time to train**: ``run_start`` to ``run_stop``, in minutes
(``meta["time_to_train_min"]``); ``run_stop``'s ``status`` says whether the run converged
(anything but ``success`` fails the result; no ``run_stop`` marks the log truncated).

Throughput records, from what each benchmark logs:

- ``tracked_stats`` / ``throughput`` entries (samples/s as the submission measured them);
- else per-epoch intervals (``epoch_start``/``epoch_stop``): samples per epoch
  (``train_samples`` logged before ``run_start``, the dataset size) / interval time;
- else blocks (``block_start``/``block_stop``) of ``epoch_count`` epochs; ``epoch_count`` is
  read from whichever of the two records carries it (submitters differ). Blocks are never
  mixed with epochs: they overlap.
- else (BERT and other benchmarks that log the samples trained as ``train_samples`` at the
  end, after ``run_start``): one record, those samples / the training interval.

A record's step is the training iteration it ends at where the global batch says so
(samples / ``global_batch_size``), so warm-up is counted in iterations.

MLPerf v0.6 logs use the older line form ``:::MLL 1558515660.674 run_start: {"value": null,
"metadata": {...}}`` (seconds, key before the JSON); it is read into the same entries. Google's
v0.6 TPU logs give the dataset as ``num_train_examples`` (after ``run_start``) and open the next
block before closing the previous one, so intervals are paired by their epoch number, not by
order. In BERT logs ``train_samples`` logged at init is the planned total, not an epoch, and
Google's TF2 BERT blocks count training steps in ``epoch_count``: there a block's samples are
``epoch_count * global_batch_size``.

Some submissions print the framework's own figure outside the MLLOG lines, e.g. NVIDIA's BERT
``{'e2e_time': 1195.3, 'training_sequences_per_second': 2541.1, ...}`` or HugeCTR's DLRM
``Hit target accuracy AUC 0.8025 at 68274/75868 iterations ... Average speed 36658058.25
records/s.``; it is the ``framework`` method's figure, and its field is named. HugeCTR's
submissions also print the same ``tracked_stats`` entry twice; a repeated entry (same step, same
throughput) is one record.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from harness.logformat import LogFormat
from harness.logformats import mlperf_rules
from harness.logparse.recorder import RecordingParser
from harness.models import StepRecord

MARKER = ":::MLLOG"
LEGACY_MARKER = ":::MLL "  # MLPerf v0.6: ":::MLL <seconds> <key>: {json}"
_LEGACY_LINE = re.compile(r":::MLL ([\d.]+) (\w+): (\{.*\})")
_FRAMEWORK_FIGURE = re.compile(
    r"['\"]?(training_sequences_per_second|training_samples_per_second|samples_per_second|"
    r"throughput|avg_exp_per_second)['\"]?\s*[:=]\s*([\d.]+(?:[eE][-+]?\d+)?)")
#: Printed figures that measure the training phase alone (NVIDIA's run_pretraining.py prints
#: training_sequences_per_second over the training steps, evaluation excluded): the figure
#: the log's author publishes, so the default.
TRAINING_PHASE_FIELDS = ("training_sequences_per_second",)
_AVERAGE_SPEED = re.compile(r"Average speed ([\d.]+(?:[eE][-+]?\d+)?) records/s")


class MLLogParser(RecordingParser):
    def __init__(self, **hints: Any):
        super().__init__(**hints)
        self.meta["end_marker"] = "run_stop"
        self._open: dict[str, tuple[float, dict]] = {}
        self._samples_per_epoch: float | None = None
        self._total_samples: float | None = None
        self._last_loss: float | None = None
        self._tracked = False
        self._tracked_seen: set[tuple[Any, float]] = set()  # (step, throughput) already recorded
        self._run_start: float | None = None
        self._run_stop: float | None = None
        self._epochs: list[tuple[float, float, dict]] = []  # (start_ms, stop_ms, metadata)
        self._blocks: list[tuple[float, float, dict]] = []
        self._global_batch: int | None = None
        self._seq_len: int | None = None
        self._reached: dict[str, float] = {}  # samples the run reached, by where the log says so
        self._claimed = 0.0  # samples the timed records say were trained

    def _legacy_entry(self, line: str) -> dict | None:
        """A v0.6 ``:::MLL <seconds> <key>: {json}`` line as an MLLOG entry."""
        match = _LEGACY_LINE.search(line)
        if match is None:
            return None
        try:
            payload = json.loads(match.group(3))
        except ValueError:
            return None
        if not isinstance(payload, dict):
            return None
        return {"key": match.group(2), "time_ms": float(match.group(1)) * 1000.0,
                "value": payload.get("value"), "metadata": payload.get("metadata")}

    def feed(self, line: str) -> StepRecord | None:
        if MARKER not in line and LEGACY_MARKER in line:
            entry = self._legacy_entry(line)
            return self._entry(entry) if entry is not None else None
        if MARKER not in line:
            if "per_second" in line or "throughput" in line:
                match = _FRAMEWORK_FIGURE.search(line)
                if match:
                    self.framework_reported = float(match.group(2))
                    self.meta["framework_field"] = match.group(1)
                    if match.group(1) in TRAINING_PHASE_FIELDS:
                        self.meta["framework_figure_is_default"] = True
            elif "Average speed" in line:
                match = _AVERAGE_SPEED.search(line)
                if match:
                    self.framework_reported = float(match.group(1))
                    self.meta["framework_field"] = "Average speed"
            self.check_failure(line)
            return None
        entry = self.marked_json(line, MARKER)
        if entry is None:
            return None
        return self._entry(entry)

    def _entry(self, entry: dict) -> StepRecord | None:
        key = entry.get("key")
        value = entry.get("value")
        metadata = entry.get("metadata") if isinstance(entry.get("metadata"), dict) else {}
        time_ms = entry.get("time_ms")
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if key == "global_batch_size" and number:
            self._global_batch = int(value)
            self.meta["global_batch_size"] = int(value)
        elif key == "max_sequence_length" and number:
            self._seq_len = int(value)
        elif key == "num_train_examples" and number:
            self._samples_per_epoch = float(value)  # Google v0.6: the dataset, after run_start
        elif key == "train_samples" and number:
            if self._run_start is None:
                self._samples_per_epoch = float(value)  # the dataset, logged at init
            else:
                self._total_samples = float(value)  # the samples trained, logged at the end
            self.meta["train_samples"] = int(value)
        elif key in ("opt_base_learning_rate", "opt_learning_rate"):
            self.meta["learning_rate"] = value
        elif key in ("train_loss", "loss") and number:
            self._last_loss = float(value)
        elif key in ("submission_benchmark", "submission_org", "submission_platform", "submission_division"):
            self.meta[key.replace("submission_", "")] = value
        elif key == "run_start" and isinstance(time_ms, (int, float)):
            self._run_start = float(time_ms)
        elif key == "run_stop":
            status = metadata.get("status")
            self.meta["run_status"] = status
            self.meta["run_complete"] = True
            if isinstance(time_ms, (int, float)):
                self._run_stop = float(time_ms)
            if status not in (None, "success"):
                self.error(f"MLPerf run_stop status: {status}")
            self._note_reached("run_stop", metadata)
        elif key in ("eval_accuracy", "eval_start", "eval_stop"):
            self._note_reached("the last eval", metadata)
        elif key in ("tracked_stats", "throughput"):
            return self._tracked_stats(value, metadata)
        elif key in ("epoch_start", "block_start") and isinstance(time_ms, (int, float)):
            self._open[self._interval_key(key[:-6], metadata)] = (float(time_ms), metadata)
        elif key in ("epoch_stop", "block_stop") and isinstance(time_ms, (int, float)):
            kind = key[:-5]
            opened = self._open.pop(self._interval_key(kind, metadata), None)
            if opened is None:  # a stop naming no epoch closes the last interval of its kind
                opened = self._pop_last(kind)
            if opened is None and kind == "block" and self._blocks:
                # MosaicML's BERT opens one block and closes it again and again: each stop
                # ends the span that began at the previous stop.
                previous = self._blocks[-1]
                opened = (previous[1], {"first_epoch_num": previous[2].get("_position")})
            if opened is not None and time_ms > opened[0]:
                metadata = {**metadata, "_position": metadata.get("first_epoch_num")}
                merged = {**opened[1], **metadata,  # epoch_count on either record
                          "_start": opened[1], "_stop": metadata}
                (self._epochs if kind == "epoch" else self._blocks).append((opened[0], float(time_ms), merged))
        return None

    @staticmethod
    def _interval_key(kind: str, metadata: dict) -> tuple:
        """Pairs a start with its stop by epoch number: blocks may overlap (Google v0.6)."""
        number = metadata.get("first_epoch_num" if kind == "block" else "epoch_num")
        return (kind, number if isinstance(number, (int, float)) else None)

    def _pop_last(self, kind: str) -> tuple[float, dict] | None:
        keys = [k for k in self._open if k[0] == kind]
        return self._open.pop(keys[-1]) if keys else None

    # ------------------------------------------------------------------ what the run trained

    def _progress_unit(self) -> str | None:
        return mlperf_rules.progress_unit(self.meta.get("benchmark"))

    def _note_reached(self, where: str, metadata: dict) -> None:
        """The samples the run had trained at a run_stop or evaluation, where the record says."""
        count = metadata.get("samples_count")
        if not isinstance(count, (int, float)) and self._progress_unit() in (
                mlperf_rules.SAMPLES, mlperf_rules.TOKENS):
            count = metadata.get("epoch_num")  # these benchmarks number epochs in samples/tokens
        if self._is_count(count):
            self._reached[where] = max(float(count), self._reached.get(where, 0.0))

    def _is_count(self, value: Any) -> bool:
        """A sample count, not an epoch number: older BERT logs keep epoch_num at 1."""
        return isinstance(value, (int, float)) and not isinstance(value, bool) \
            and value >= max(self._global_batch or 1, 2)

    def _samples_per_iteration(self) -> float | None:
        """Samples (tokens for GPT-3) one iteration trains, in the unit the log counts them."""
        if not self._global_batch:
            return None
        if self._progress_unit() == mlperf_rules.TOKENS:
            return float(self._global_batch * (self._seq_len or 2048))
        return float(self._global_batch)

    def _step_of(self, step: Any) -> int | None:
        """A tracked_stats step as a training iteration where the rules say what it counts."""
        if not isinstance(step, (int, float)) or isinstance(step, bool):
            return None
        unit = self._progress_unit()
        per_iteration = self._samples_per_iteration()
        if unit in (mlperf_rules.SAMPLES, mlperf_rules.TOKENS) and per_iteration:
            return int(math.ceil(step / per_iteration))
        if unit == mlperf_rules.EPOCHS:
            self.meta["step_unit"] = "epoch"  # the warm-up is then counted in epochs
        return int(step)

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
        seen = (step if isinstance(step, (int, float, str)) else repr(step), float(throughput))
        if seen in self._tracked_seen:
            return None  # the same entry printed again (HugeCTR's DLRM logs repeat it)
        self._tracked_seen.add(seen)
        self.meta["samples_from"] = "the throughput the log prints in its tracked_stats records"
        return self.record(step=self._step_of(step), throughput=float(throughput),
                           loss=float(loss) if isinstance(loss, (int, float)) else self._last_loss)

    def _iterations(self, samples: float) -> int | None:
        per_iteration = self._samples_per_iteration()
        if per_iteration:
            return int(math.ceil(samples / per_iteration))
        return None

    def _counted_samples(self, metadata: dict) -> tuple[float | None, str | None]:
        """Samples an interval trained, from the counts its own records carry."""
        start, stop = metadata.get("_start") or {}, metadata.get("_stop") or {}
        per_iteration = self._samples_per_iteration()
        if per_iteration and all(isinstance(m.get("step"), (int, float)) for m in (start, stop)) \
                and stop["step"] > start["step"]:
            return (stop["step"] - start["step"]) * per_iteration, "block steps x global batch"
        begin, end = start.get("samples_count"), stop.get("samples_count")
        if isinstance(begin, (int, float)) and isinstance(end, (int, float)):
            if end > begin:
                return float(end - begin), "block samples_count (stop - start)"
            if end == begin and end > 0:
                return float(end), "block samples_count"
        if self._progress_unit() in (mlperf_rules.SAMPLES, mlperf_rules.TOKENS):
            begin, end = start.get("first_epoch_num"), stop.get("_position")
            if isinstance(begin, (int, float)) and self._is_count(end) and end > begin:
                return float(end - begin), "block_stop sample counts (first_epoch_num in samples)"
        return None, None

    def _interval_records(self) -> None:
        """Epoch (else block) intervals as records, once the whole log is known."""
        counted = [self._counted_samples(metadata) for _, _, metadata in self._blocks]
        if self._blocks and all(samples for samples, _ in counted):
            self._counted_blocks(counted)
            return
        if self.meta.get("benchmark") == "bert":
            # BERT has no epochs: train_samples at init is the planned total.
            self._samples_per_epoch = None
            if not self._total_samples and self._blocks and self._global_batch:
                self._step_blocks()
                return
        if self._samples_per_epoch and (self._epochs or self._blocks) \
                and self._progress_unit() in (None, mlperf_rules.EPOCHS):
            intervals, kind = (self._epochs, "epoch") if self._epochs else (self._blocks, "block")
            intervals = sorted(intervals, key=lambda interval: interval[0])
            self.meta["throughput_records"] = f"{kind} intervals (train_samples per epoch / interval time)"
            self.meta["samples_from"] = f"train_samples (the dataset) x epochs per {kind}"
            done = 0.0
            for start, stop, metadata in intervals:
                epochs = float(metadata.get("epoch_count") or 1) if kind == "block" else 1.0
                samples = self._samples_per_epoch * epochs
                seconds = (stop - start) / 1000.0
                done += samples
                iterations = self._iterations(done)
                number = metadata.get("first_epoch_num", metadata.get("epoch_num"))
                step = iterations if iterations is not None else (
                    int(number + epochs - 1) if isinstance(number, (int, float)) else None)
                self.record(step=step, step_time_s=seconds, throughput=samples / seconds,
                            samples=int(samples), loss=self._last_loss)
            return
        self._whole_run_record()

    def _counted_blocks(self, counted: list[tuple[float | None, str | None]]) -> None:
        """Blocks whose own records say how many samples they trained."""
        order = sorted(range(len(self._blocks)), key=lambda i: self._blocks[i][0])
        self.meta["throughput_records"] = "block intervals (samples the blocks trained / interval time)"
        self.meta["samples_from"] = counted[order[0]][1]
        done = 0.0
        for index in order:
            start, stop, _ = self._blocks[index]
            samples = counted[index][0]
            seconds = (stop - start) / 1000.0
            done += samples
            self.record(step=self._iterations(done), step_time_s=seconds, throughput=samples / seconds,
                        samples=int(samples), loss=self._last_loss)

    def _trained_samples(self) -> tuple[float | None, str | None]:
        """What the whole run trained: run_stop's count, else the last eval's, else the
        train_samples logged at the end (capped by the last eval: a configured maximum that
        the run stopped before reaching says nothing of what was trained)."""
        if "run_stop" in self._reached:
            return self._reached["run_stop"], "run_stop samples_count"
        last_eval = self._reached.get("the last eval")
        if self._total_samples and (last_eval is None or self._total_samples <= last_eval * 1.0001):
            return self._total_samples, "train_samples at the end"
        if last_eval is not None:
            return last_eval, "the last eval's sample count"
        return None, None

    def _whole_run_record(self) -> None:
        samples, where = self._trained_samples()
        if not samples:
            return
        spans = self._blocks or self._epochs
        if spans:
            start, stop = min(s[0] for s in spans), max(s[1] for s in spans)
        elif self._run_start is not None and self._run_stop is not None:
            start, stop = self._run_start, self._run_stop
        else:
            return
        if stop <= start:
            return
        seconds = (stop - start) / 1000.0
        self.meta["throughput_records"] = "samples trained / training time (one record)"
        self.meta["samples_from"] = where
        self.record(step=self._iterations(samples) or 1, step_time_s=seconds,
                    throughput=samples / seconds, samples=int(samples), loss=self._last_loss)

    def _step_blocks(self) -> None:
        """Blocks whose ``epoch_count`` is training steps (Google's TF2 BERT)."""
        self.meta["throughput_records"] = "block intervals (epoch_count steps * global_batch_size / interval time)"
        self.meta["samples_from"] = "block epoch_count (steps) x global batch"
        steps = 0
        for start, stop, metadata in sorted(self._blocks, key=lambda block: block[0]):
            count = metadata.get("epoch_count")
            if not isinstance(count, (int, float)) or count <= 0:
                continue
            samples = float(count) * self._global_batch
            seconds = (stop - start) / 1000.0
            steps += int(count)
            self.record(step=steps, step_time_s=seconds, throughput=samples / seconds,
                        samples=int(samples), loss=self._last_loss)

    def record(self, step: int | None = None, **fields: Any) -> StepRecord | None:
        if fields.get("samples") and fields.get("step_time_s"):
            self._claimed += fields["samples"]  # streamed logs keep no step list to add up later
        return super().record(step, **fields)

    def _check_possible(self) -> None:
        """Rates that need more samples than the run reached are reported, never silently."""
        reached = max(self._reached.values(), default=None)
        if self._total_samples and self._run_start is not None and reached is None:
            reached = self._total_samples
        claimed = self._claimed
        if not reached or not claimed:
            return
        if claimed > reached * 1.01:
            self.meta.setdefault("warnings", []).append(
                f"impossible throughput: the records add up to {claimed:,.0f} samples, but the run "
                f"reached {reached:,.0f} ({', '.join(sorted(self._reached)) or 'train_samples'}); "
                "the log's sample counts are not what was trained")

    def finish(self):
        if not self._tracked:
            self._interval_records()
        self._check_possible()
        if self._run_start is not None and self._run_stop is not None:
            self.meta["time_to_train_min"] = (self._run_stop - self._run_start) / 60000.0
        self.unit = mlperf_rules.throughput_unit(self.meta.get("benchmark"))
        return super().finish()


class MLLogFormat(LogFormat, name="mllog", unit="samples/s", default_method="harness",
                  parser=MLLogParser):
    """MLPerf ':::MLLOG {json}' lines: status and time to train from run_start/run_stop; throughput
    from tracked_stats, epoch or block intervals, or samples trained"""

    def detect(self, line: str) -> bool:
        if MARKER in line:
            return '"key"' in line
        return _LEGACY_LINE.search(line) is not None if LEGACY_MARKER in line else False
