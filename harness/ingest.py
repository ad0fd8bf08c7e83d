"""From a log file to the uniform result: detect, stream, aggregate, build, and ingest.

``parse_log_file`` is the library entry point behind ``harness parse``; ``ingest`` records
its result in the results database, keyed by the log's sha256 so a second ingest of the
same file is a no-op.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from harness import __version__
from harness.errors import UserInputError
from harness.health import uniform_guess_loss
from harness.logformat import LogFormat
from harness.logparse.detect import detect_format
from harness.logparse.metadata import Fact, facts_from_file_name
from harness.logparse.methods import (
    Aggregate, MethodOptions, aggregate, canonical_method, is_per_device,
)
from harness.logparse.summary import StreamedLog, stream_log
from harness.models import BenchmarkResult, CaseSpec, LegacyIndex, ResolvedConfig, RunSettings
from harness.models.result import BATCH_NOT_IN_LOG, EnvironmentFingerprint, OtherFigure
from harness.names import check_path_name, path_name_from
from harness.registry import Registry
from harness.result_builder import FinalResult, build_result, log_peak_memory, log_verdict
from harness.results_io import atomic_write_text, legacy_file_name, legacy_index
from harness.stats import step_time_stats

# Units whose FINAL_RESULT belongs to NLP (direction 1) rather than CV (direction 0).
_NLP_UNITS = ("tokens/s", "sequences/s", "words/s")


@dataclass
class ParseRequest:
    """What ``harness parse`` was asked (every field optional but the path)."""

    path: Path
    format: str | None = None
    method: str | None = None
    skip: int | None = None  # warm-up iterations
    trim: int | None = None
    skip_records: int | None = None  # warm-up records (replaces skip)
    gpus: int | None = None
    batch_size: int | None = None
    seq_len: int | None = None
    precision: str | None = None
    case: str | None = None
    framework: str | None = None
    vendor: str | None = None
    format_options: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # the case, framework and vendor name the run id, hence the run folder and index files
        for option in ("case", "framework", "vendor"):
            if (value := getattr(self, option)) is not None:
                check_path_name(value, f"--{option}")


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


def _resolve_facts(request: ParseRequest, path: Path, parsed, streamed: StreamedLog) -> dict[str, Fact]:
    """GPU count, precision, batch size and sequence length, each with where it came from:
    the command line, else the format's own reading of the log, else a line of the log that
    states it, else the file name, else a default."""
    stated = streamed.stated
    named = facts_from_file_name(path.name)
    meta = parsed.meta
    facts: dict[str, Fact] = {}

    def pick(name: str, flag, meta_key: str | None) -> None:
        if flag:
            facts[name] = Fact(flag, f"--{name.replace('_', '-')} {flag}")
        elif meta_key and meta.get(meta_key):
            facts[name] = Fact(meta[meta_key], f"log ({parsed.format} format: {meta_key})")
        elif name in stated:
            facts[name] = stated[name]
        elif name in named:
            facts[name] = named[name]

    pick("gpus", request.gpus, "gpus")
    facts.setdefault("gpus", Fact(1, "default: 1 (not stated by the log or its file name)"))
    pick("precision", request.precision, None)
    facts.setdefault("precision", Fact("fp32", "default: fp32 (not stated by the log or its file name)"))
    pick("batch_size", request.batch_size, "batch_size")
    global_batch = meta.get("global_batch_size") or (stated["global_batch_size"].value
                                                     if "global_batch_size" in stated else None)
    if "batch_size" not in facts and global_batch:
        gpus = int(facts["gpus"].value)
        facts["batch_size"] = Fact(max(1, int(global_batch) // gpus),
                                   f"global batch {global_batch} / {gpus} GPUs")
    pick("seq_len", request.seq_len, None)
    return facts


def _default_case(path: Path) -> str:
    return path_name_from(re.sub(r"\.(log|txt|out)$", "", path.name), "ingested")


def _case_spec(registry: Registry, name: str, unit: str) -> CaseSpec:
    """The registered case (its unit replaced by the log's), or a stand-in for the legacy index."""
    if name in registry.cases:
        return registry.cases.get(name).model_copy(update={"unit": unit})
    nlp = unit in _NLP_UNITS
    return CaseSpec(name=name, model=name, dataset="ingested-log", unit=unit,
                    mission_name=name, direction_id=1 if nlp else 0,
                    legacy_prefix="nlp" if nlp else "clas")


def parse_log_file(registry: Registry, request: ParseRequest) -> ParseOutcome:
    """Parse one log into a BenchmarkResult (source="ingested") and its legacy index."""
    path = Path(request.path)
    if path.is_dir():
        raise UserInputError(f"{path} is a folder; give log files (e.g. {path}/*.log)")
    if not path.is_file():
        raise UserInputError(f"{path}: no such log file")
    try:
        return _parse_readable(registry, request, path)
    except OSError as exc:
        raise UserInputError(f"{path}: cannot read the log ({exc.strerror or exc})") from None


def _parse_readable(registry: Registry, request: ParseRequest, path: Path) -> ParseOutcome:
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

    facts = _resolve_facts(request, path, parsed, streamed)
    sources = {name: fact.source for name, fact in facts.items()}
    gpus = int(facts["gpus"].value)
    if facts["gpus"].source.startswith("default"):
        notes.append("GPU count not given, not stated by the log nor its file name: assuming 1 (use --gpus)")

    skip_used = 0
    agg: Aggregate | None = None
    other: Aggregate | None = None
    options = MethodOptions(skip=request.skip, trim=request.trim, skip_records=request.skip_records)
    if request.method is None and parsed.meta.get("framework_figure_is_default") \
            and parsed.framework_reported is not None:
        # The log prints the framework's own training-phase figure, the one its author publishes.
        method = "framework"
    if summary.count or parsed.framework_reported is not None:
        try:
            agg = aggregate(method, parsed, summary, options)
            skip_used = agg.skipped
        except UserInputError:
            if summary.count == 0 and parsed.errors:
                agg = None  # a crashed run: report the failure, not the missing number
            else:
                raise
    if agg is not None:
        other = _other_figure(method, parsed, summary, options)
    status, reason = log_verdict("success", None, streamed, has_value=agg is not None)

    unit = parsed.unit or fmt.unit or "samples/s"
    final = None
    scope = None
    if agg is not None:
        factor = 1.0
        per_device = is_per_device(parsed, method)
        if parsed.meta.get("keyword_mode") == -1:
            scope = "per-gpu" if per_device or parsed.meta.get("keyword_scope") == "per-gpu" else "global"
            if scope == "per-gpu":
                notes.append(f"keyword values read as per-GPU figures (the default; --keyword-scope global "
                             f"for logs that print the job's total): multiplied by {gpus} GPUs")
            else:
                notes.append("keyword values read as the job's global figures (--keyword-scope global): "
                             "not multiplied")
        elif per_device:
            scope = "per-gpu"
            notes.append(f"the log's throughput is per GPU: multiplied by {gpus} GPUs ({sources['gpus']})")
        else:
            scope = "global"
        if per_device:
            factor *= gpus
        seq_len = facts.get("seq_len")
        if parsed.meta.get("per_sample_throughput") and unit == "samples/s" and seq_len is not None \
                and request.seq_len is None:
            # Megatron prints samples per iteration; tokens/s needs the sequence length.
            factor *= int(seq_len.value)
            unit = "tokens/s"
            notes.append(f"samples/s x sequence length {seq_len.value} ({seq_len.source}) = tokens/s")
        final = FinalResult(value=agg.value * factor,
                            median=agg.median * factor if agg.median is not None else None,
                            method=f"{agg.method}: {agg.description}")

    batch = facts["batch_size"].value if "batch_size" in facts else 0
    batch = int(batch) if batch else 0
    precision = str(facts["precision"].value)
    warnings = list(agg.warnings) if agg is not None else []
    warnings += parsed.meta.get("warnings") or []
    # A format with an end-of-run marker knows the run finished when it saw the marker, even
    # if the file lacks a final newline (Google's MLPerf v0.6 logs end that way).
    has_end_marker = bool(parsed.meta.get("end_marker"))
    ended = has_end_marker and bool(parsed.meta.get("run_complete"))
    no_marker = has_end_marker and not ended
    truncated = no_marker or (streamed.cut_mid_line and not ended)
    if truncated:
        why = f"it has no end-of-run marker ({parsed.meta.get('end_marker')})" if no_marker else \
            "it ends in the middle of a line"
        warnings.append(f"the log looks truncated: {why}")
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
        sources={"settings": "ingested log",
                 **({} if batch else {"micro_batch_size": BATCH_NOT_IN_LOG})},
    )
    stamp = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc)
    result = build_result(
        run_id=f"ingested-{case_name}-{streamed.sha256[:12]}",
        source="ingested", source_sha256=streamed.sha256,
        config=config, reading=streamed, log_format=fmt.name, final=final, unit=unit,
        step_time=step_time_stats(summary.step_time, skip_used),
        status=status, failure_reason=reason, framework_version=None,
        environment=EnvironmentFingerprint(harness_version=__version__, python="unknown",
                                           platform="unknown (ingested log)"),
        started_at=stamp, finished_at=stamp, log_file=str(path),
        peak_memory_bytes=log_peak_memory(streamed), notes=notes,
        precision=precision,
        uniform_loss=uniform_guess_loss(case, config.params),
    )
    if result.throughput is not None and agg is not None:
        result.throughput = result.throughput.model_copy(update={
            "records_used": agg.used, "first_step_used": agg.first_step, "last_step_used": agg.last_step,
            "field": agg.field, "scope": scope,
            "samples_from": None if agg.method == "framework" else parsed.meta.get("samples_from"),
            "other": None if other is None else OtherFigure(
                value=other.value * (gpus if is_per_device(parsed, other.method) else 1),
                method=f"{other.method}: {other.description}", field=other.field)})
    if result.log_summary is not None:
        meta = dict(result.log_summary.meta)
        if "seq_len" in facts:
            meta["seq_len"] = facts["seq_len"].value
        result.log_summary = result.log_summary.model_copy(
            update={"sources": sources, "truncated": truncated, "meta": meta})
    ttt = parsed.meta.get("time_to_train_min")
    result = result.model_copy(update={
        "warnings": warnings,
        "time_to_train_min": float(ttt) if isinstance(ttt, (int, float)) else None})
    legacy = legacy_index(result, case, log_file=str(path))
    return ParseOutcome(result=result, legacy=legacy, case=case, format=fmt.name, aggregate=agg,
                        streamed=streamed, notes=notes)


def _other_figure(method: str, parsed, summary, options: MethodOptions) -> Aggregate | None:
    """The figure beside the reported one: the framework's printed figure beside harness's
    records, or harness's beside the framework's; None where the log offers only one."""
    if method == "framework":
        if not summary.count:
            return None
        other_method = "harness"
    elif parsed.framework_reported is not None:
        other_method = "framework"
    else:
        return None
    try:
        return aggregate(other_method, parsed, summary, options)
    except UserInputError:
        return None


def ingest(outcome: ParseOutcome, output: Path) -> tuple[bool, Path]:
    """Record the outcome in ``output``/harness.db and write its run folder.

    Returns (added, run folder); ``added`` is False when a log with the same sha256 was
    ingested before, in which case nothing is written.
    """
    import json
    import sqlite3

    from harness.errors import StorageError
    from harness.store import ResultStore

    output = Path(output)
    if output.exists() and not output.is_dir():
        raise UserInputError(f"--output {output} is a file; give the results folder (it is "
                             "created if missing)")
    run_dir = (output / outcome.result.run_id).resolve()
    try:
        added = ResultStore(output).add(outcome.result, run_dir)
        if added:
            atomic_write_text(run_dir / "result.json", outcome.result.model_dump_json(indent=2) + "\n")
            index_path = run_dir / "index" / legacy_file_name(outcome.result, outcome.case)
            atomic_write_text(index_path, json.dumps(outcome.legacy.model_dump(), ensure_ascii=False,
                                                     indent=1) + "\n")
    except (OSError, sqlite3.OperationalError) as exc:
        raise StorageError(f"could not record {outcome.result.log_file} in {output}: "
                           f"{getattr(exc, 'strerror', None) or exc}") from None
    return added, run_dir
