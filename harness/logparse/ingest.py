"""From a log file to the uniform result: detect, stream, aggregate, build, and ingest.

``parse_log_file`` is the library entry point behind ``harness parse``; ``ingest`` records
its result in the results database, keyed by the log's sha256 so a second ingest of the
same file is a no-op.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import UserInputError
from harness.logformat import LogFormat
from harness.logparse.detect import detect_format
from harness.logparse.methods import (
    Aggregate, MethodOptions, aggregate, canonical_method, fast_cv, is_per_device,
)
from harness.metrics import percentile
from harness.logparse.summary import StreamedLog, stream_log
from harness.models import BenchmarkResult, CaseSpec, LegacyIndex, ResolvedConfig, RunSettings
from harness.models.result import EnvironmentFingerprint, LogSummary, StepTimeStats, Throughput
from harness.registry import Registry
from harness.results_io import atomic_write_text, legacy_file_name, legacy_index

_PRECISION_WORDS = (("bf16", "bf16"), ("fp16", "fp16"), ("amp", "fp16"), ("half", "fp16"),
                    ("fp32", "fp32"), ("tf32", "fp32"))
# Units whose FINAL_RESULT belongs to NLP (direction 1) rather than CV (direction 0).
_NLP_UNITS = ("tokens/s", "sequences/s", "words/s")


@dataclass
class ParseRequest:
    """What ``harness parse`` was asked (every field optional but the path)."""

    path: Path
    format: str | None = None
    method: str | None = None
    skip: int | None = None
    trim: int | None = None
    gpus: int | None = None
    batch_size: int | None = None
    seq_len: int | None = None
    precision: str | None = None
    case: str | None = None
    framework: str | None = None
    vendor: str | None = None
    format_options: dict[str, Any] = field(default_factory=dict)


@dataclass
class ParseOutcome:
    result: BenchmarkResult
    legacy: LegacyIndex
    case: CaseSpec
    format: str
    aggregate: Aggregate | None
    streamed: StreamedLog
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.legacy.JOB_FAIL_FLAG == 1


def choose_format(registry: Registry, request: ParseRequest) -> LogFormat:
    if request.format:
        return registry.log_formats.get(request.format)
    if request.format_options.get("keyword"):
        return registry.log_formats.get("keyword")
    return detect_format(request.path, registry.log_formats.items.values())


def _precision(request: ParseRequest) -> str:
    if request.precision:
        return request.precision
    name = request.path.name.lower()
    for word, precision in _PRECISION_WORDS:
        if word in name:
            return precision
    return "fp32"


def _default_case(path: Path) -> str:
    stem = re.sub(r"\.(log|txt|out)$", "", path.name)
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", stem) or "ingested"


def _case_spec(registry: Registry, name: str, unit: str) -> CaseSpec:
    """The registered case (its unit replaced by the log's), or a stand-in for the legacy index."""
    if name in registry.cases:
        return registry.cases.get(name).model_copy(update={"unit": unit})
    nlp = unit in _NLP_UNITS
    return CaseSpec(name=name, model=name, dataset="ingested-log", unit=unit,
                    mission_name=name, direction_id=1 if nlp else 0,
                    legacy_prefix="nlp" if nlp else "clas")


def _step_time(streamed: StreamedLog, skip: int) -> StepTimeStats | None:
    times = streamed.summary.step_time  # array('d'): slices stay compact
    if not times:
        return None
    kept = times[skip:] if len(times) > skip else times[-1:]
    ordered = sorted(kept)
    return StepTimeStats(n=len(kept), mean=statistics.fmean(kept), median=statistics.median(ordered),
                         p5=percentile(ordered, 5), p95=percentile(ordered, 95), cv=fast_cv(kept))


def parse_log_file(registry: Registry, request: ParseRequest) -> ParseOutcome:
    """Parse one log into a BenchmarkResult (source="ingested") and its legacy index."""
    path = Path(request.path)
    if not path.is_file():
        raise UserInputError(f"{path}: no such log file")
    fmt = choose_format(registry, request)
    method = canonical_method(request.method or fmt.default_method)
    if method == "analysis-py" and fmt.name != "keyword":
        raise UserInputError("--method analysis-py applies to keyword mode (--keyword) only")
    hints: dict[str, Any] = {"gpus": request.gpus, "batch_size": request.batch_size,
                             "seq_len": request.seq_len}
    if fmt.name == "keyword":
        hints.update(request.format_options)
    streamed = stream_log(path, fmt, **hints)
    parsed, summary = streamed.parsed, streamed.summary
    notes: list[str] = []

    if not streamed.recognised and parsed.framework_reported is None and not parsed.errors:
        raise UserInputError(
            f"{path}: no line is in the {fmt.name!r} format ({fmt.description}); "
            "check --format, or use keyword mode with --keyword"
        )

    # The GPU count: the command line, else what the log says, else 1 (said so in a note).
    gpus = request.gpus or parsed.meta.get("gpus")
    if not gpus:
        gpus = 1
        notes.append("GPU count not given and not in the log: assuming 1 (use --gpus)")
    gpus = int(gpus)

    skip_used = 0
    agg: Aggregate | None = None
    status, reason = "success", None
    if summary.count == 0 and parsed.framework_reported is None:
        status, reason = "failed", "no completed training steps were found in the log"
    else:
        try:
            agg = aggregate(method, parsed, summary, MethodOptions(skip=request.skip, trim=request.trim))
            skip_used = agg.skipped
        except UserInputError:
            if summary.count == 0 and parsed.errors:
                agg = None  # a crashed run: report the failure, not the missing number
            else:
                raise
    if parsed.errors:
        status, reason = "failed", "log shows a failure: " + " | ".join(parsed.errors[-3:])

    unit = parsed.unit or fmt.unit or "samples/s"
    throughput = None
    if agg is not None:
        scale = gpus if is_per_device(parsed, method) else 1
        if scale != 1:
            notes.append(f"the log's throughput is per GPU: multiplied by {gpus} GPUs")
        value = agg.value * scale
        throughput = Throughput(
            value=value, unit=unit, per_device=value / gpus,
            median=agg.median * scale if agg.median is not None else None,
            method=f"{agg.method}: {agg.description}",
        )

    batch = request.batch_size or parsed.meta.get("batch_size")
    global_batch = parsed.meta.get("global_batch_size")
    if not batch and global_batch:
        batch = max(1, int(global_batch) // gpus)
    batch = int(batch) if batch else 0
    precision = _precision(request)
    case_name = request.case or _default_case(path)
    case = _case_spec(registry, case_name, unit)
    framework = request.framework or getattr(fmt, "framework", None) or "unknown"
    vendor = request.vendor or "unknown"
    settings = RunSettings(
        precision=precision if precision in ("fp32", "fp16", "bf16") else "fp32",
        micro_batch_size=max(batch, 1),
        max_steps=max(int(parsed.meta.get("max_steps") or summary.last_step or 1), 1),
        skip_steps=skip_used, nproc=gpus, nnodes=1,
    )
    config = ResolvedConfig(
        case=case_name, model=case.model, framework=framework, vendor=vendor,
        settings=settings, params={"log_format": fmt.name, "method": method},
        sources={"settings": "ingested log"},
    )
    stamp = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc)
    loss = summary.loss
    result = BenchmarkResult(
        run_id=f"ingested-{case_name}-{streamed.sha256[:12]}",
        source="ingested",
        source_sha256=streamed.sha256,
        case=case_name, model=case.model, framework=framework, framework_version=None,
        vendor=vendor, devices=None, nnodes=1, nproc=gpus,
        run_mode="sp" if gpus == 1 else "mp", precision=precision,
        micro_batch_size=batch, global_batch_size=int(global_batch or batch * gpus),
        max_steps=settings.max_steps, steps_completed=summary.last_step or 0,
        skip_steps=skip_used, throughput=throughput,
        step_time=_step_time(streamed, skip_used),
        loss_first=loss.first, loss_final=loss.last,
        peak_memory_bytes=parsed.peak_memory_bytes or summary.memory_bytes,
        log_summary=LogSummary(
            format=fmt.name,
            lines=streamed.lines,
            steps_parsed=summary.count,
            first_step=summary.first_step,
            last_step=summary.last_step,
            framework_reported=parsed.framework_reported,
            loss_curve=loss.points,
            learning_rate_curve=summary.learning_rate.points,
            meta={k: v for k, v in parsed.meta.items() if _is_plain(v)},
            notes=notes,
        ),
        status=status, failure_reason=reason,
        config_hash=config.config_hash, config=config,
        environment=EnvironmentFingerprint(harness_version=__version__, python="unknown",
                                           platform="unknown (ingested log)"),
        started_at=stamp, finished_at=stamp, log_file=str(path),
    )
    legacy = legacy_index(result, case, log_file=str(path))
    return ParseOutcome(result=result, legacy=legacy, case=case, format=fmt.name, aggregate=agg,
                        streamed=streamed, notes=notes)


def _is_plain(value: Any) -> bool:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return True
    if isinstance(value, (list, tuple)):
        return len(value) <= 1000 and all(isinstance(v, (int, float, str)) for v in value)
    return False


def ingest(outcome: ParseOutcome, output: Path) -> tuple[bool, Path]:
    """Record the outcome in ``output``/harness.db and write its run folder.

    Returns (added, run folder); ``added`` is False when a log with the same sha256 was
    ingested before, in which case nothing is written.
    """
    import json

    from harness.store import ResultStore

    run_dir = (Path(output) / outcome.result.run_id).resolve()
    added = ResultStore(Path(output)).add(outcome.result, run_dir)
    if added:
        atomic_write_text(run_dir / "result.json", outcome.result.model_dump_json(indent=2) + "\n")
        index_path = run_dir / "index" / legacy_file_name(outcome.result, outcome.case)
        atomic_write_text(index_path, json.dumps(outcome.legacy.model_dump(), ensure_ascii=False,
                                                 indent=1) + "\n")
    return added, run_dir
