"""``harness parse``: turn existing training logs into the uniform result (and ingest them)."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from harness.cli.state import app_state
from harness.cli.options import DEFAULT_OUTPUT, OutputOption, PrecisionChoice

EXIT_JOB_FAILED = 1

HELP = """Parse training logs written by any supported framework into the uniform result.

Prints, per log, the result summary and the legacy index JSON (FINAL_RESULT, UNIT,
JOB_FAIL_FLAG). JOB_FAIL_FLAG comes from the log itself: a traceback, a NaN loss, or no
completed step. Exit codes: 0 all logs parsed and succeeded, 1 a log shows a failed run,
2 bad input (e.g. a log with no recognisable line).

The format is detected from the first characteristic line (--format forces one; see
`harness list formats` or `harness parse --list-formats`).

\b
Methods (--method; each format has a default):
  harness         skip --skip warm-up iterations (default 10), mean of the records whose iterations all lie past it; median/p5/p95/CV too
  trimmed         skip --skip iterations (default 10), sort, drop --trim (default 5) from each end, mean
  harmonic-epoch  harmonic mean of per-epoch throughput after --skip epochs (default 1)
  framework       the final figure the framework printed itself (the field is named)
  last            the last logged step (FlagPerf's Megatron cases)
  analysis-py     keyword mode: the seeds' analysis.py (mean of records, then convert)

Warm-up is counted in training iterations: with a record every 10 iterations, --skip 10
leaves out one record. --skip-records N counts it in logged records instead. The result
names the records used; a figure resting on one or two records carries a warning.

GPU count, precision, batch size and sequence length come from the flags, else from the
log (DLLogger parameters, Megatron's argument dump, Namespace(num_gpus=8, ...), launcher
lines), else from the file name (N1C8, gpu8, 8xA100, bs96, fp16); the result says where
each came from. Per-GPU figures (e.g. the rank-0 log of a Paddle job) are multiplied by
that GPU count. MLPerf logs also give the time to train (run_start to run_stop) and their
status from run_stop. A log cut mid-line or without its end-of-run marker is flagged.

\b
Examples:
  harness parse train.log
  harness parse PaddleNLP_bert_N1C8_log --gpus 8 --method trimmed --json
  harness parse megatron.log --format megatron --seq-len 2048 --method last
  harness parse old.log --keyword ips: --skip-steps 5 --model-mode -1 --ips-unit tokens/s
  harness parse logs/*.log --case gpt3_6.7B --framework pytorch --vendor nvidia --ingest
"""


class MethodChoice(str, Enum):
    harness = "harness"
    trimmed = "trimmed"
    harmonic_epoch = "harmonic-epoch"
    framework = "framework"
    last = "last"
    analysis_py = "analysis-py"


class KeywordScope(str, Enum):
    per_gpu = "per-gpu"
    global_ = "global"


class TimeUnitChoice(str, Enum):
    s = "s"
    ms = "ms"
    us = "us"


def parse_command(
    ctx: typer.Context,
    logs: Annotated[Optional[list[Path]], typer.Argument(
        help="Log files to parse.", show_default=False, metavar="LOG")] = None,
    format_: Annotated[Optional[str], typer.Option(
        "--format", help="Force a log format instead of detecting it.")] = None,
    method: Annotated[Optional[MethodChoice], typer.Option(
        help="Aggregation method; default: the format's own.")] = None,
    skip: Annotated[Optional[int], typer.Option(
        min=0, help="Warm-up training iterations left out (epochs for harmonic-epoch).")] = None,
    skip_records: Annotated[Optional[int], typer.Option(
        min=0, help="Warm-up counted in logged records instead of iterations.")] = None,
    trim: Annotated[Optional[int], typer.Option(
        min=0, help="trimmed: records dropped from each end after sorting.")] = None,
    gpus: Annotated[Optional[int], typer.Option(
        min=1, help="GPUs of the job (default: from the log, else 1).")] = None,
    batch_size: Annotated[Optional[int], typer.Option(
        "--micro-batch-size", "--batch-size",
        min=1, help="Per-GPU (micro) batch size (default: from the log; --batch-size is the same option).")] = None,
    seq_len: Annotated[Optional[int], typer.Option(
        min=1, help="Tokens per sample: Megatron samples/s become tokens/s.")] = None,
    precision: Annotated[Optional[PrecisionChoice], typer.Option(
        help="Precision of the run (default: from the file name, else fp32).")] = None,
    case: Annotated[Optional[str], typer.Option(
        help="Case the log belongs to (default: the file name).")] = None,
    framework: Annotated[Optional[str], typer.Option(
        help="Framework that wrote the log (default: the format's).")] = None,
    vendor: Annotated[Optional[str], typer.Option(help="Vendor of the hardware.")] = None,
    ingest: Annotated[bool, typer.Option(
        "--ingest", help="Record the results in OUTPUT/harness.db (same file twice: no-op).")] = False,
    output: OutputOption = DEFAULT_OUTPUT,
    as_json: Annotated[bool, typer.Option(
        "--json", help="Print JSON only: {result, legacy_index} (a list for several logs).")] = False,
    keyword: Annotated[Optional[str], typer.Option(
        help="Keyword mode: the token that precedes each value (analysis.py --keyword).")] = None,
    skip_steps: Annotated[Optional[int], typer.Option(
        min=0, help="Keyword mode: records skipped (analysis.py --skip_steps; same as --skip).")] = None,
    model_mode: Annotated[int, typer.Option(
        help="Keyword mode: -1 ips per GPU, 0 s/step, 1 steps/s, 2 s/step->steps/s, "
             "3 steps/s->samples/s, 4 s/epoch.")] = -1,
    base_batch_size: Annotated[Optional[int], typer.Option(
        min=1, help="Keyword mode: per-GPU batch size for modes 0 and 3.")] = None,
    time_unit: Annotated[TimeUnitChoice, typer.Option(
        help="Keyword mode: unit of time records (modes 0 and 2).")] = TimeUnitChoice.s,
    keyword_scope: Annotated[Optional[KeywordScope], typer.Option(
        help="Keyword mode -1: values are per GPU (multiplied by the GPU count; the default, "
             "as analysis.py) or the job's global figure (taken as printed).")] = None,
    ips_unit: Annotated[Optional[str], typer.Option(
        help="Keyword mode -1: unit of the values (default samples/s).")] = None,
    separator: Annotated[Optional[str], typer.Option(
        help="Keyword mode: field separator (default: whitespace).")] = None,
    position: Annotated[Optional[int], typer.Option(
        help="Keyword mode: take the field at this index instead of the one after the keyword.")] = None,
    list_formats: Annotated[bool, typer.Option(
        "--list-formats", help="List the registered log formats and exit.")] = False,
    compliance: Annotated[bool, typer.Option(
        "--compliance", help="MLPerf logs: also run MLPerf's compliance checker (the mlperf-logging "
                             "package, installed separately) and report its verdict beside the figure.")] = False,
    compliance_ruleset: Annotated[Optional[str], typer.Option(
        help="--compliance: the MLPerf training ruleset to check against, e.g. 4.1.0 (default: the "
             "newest the installed mlperf-logging knows).")] = None,
) -> int:
    import harness
    from harness.errors import UserInputError

    registry = app_state(ctx).registry()
    if list_formats:
        for name in registry.log_formats.names():
            fmt = registry.log_formats.get(name)
            typer.echo(f"{name:18} default method {fmt.default_method:15} {fmt.description}")
        return 0
    if not logs:
        raise UserInputError("give at least one log file: harness parse LOG... (see --help)")
    if keyword is None and (base_batch_size or skip_steps is not None or model_mode != -1
                            or keyword_scope is not None):
        raise UserInputError("--skip-steps/--model-mode/--base-batch-size/--keyword-scope belong to keyword mode: add --keyword")
    if skip_records is not None and (skip is not None or skip_steps is not None):
        raise UserInputError("--skip-records replaces --skip: give one of them")
    if skip is not None and skip_steps is not None and skip != skip_steps:
        raise UserInputError("--skip and --skip-steps disagree; give one of them")
    keyword_options = {}
    if keyword is not None:
        if format_ not in (None, "keyword"):
            raise UserInputError(f"--keyword is keyword mode; it cannot be combined with --format {format_}")
        keyword_options = {"keyword": keyword, "model_mode": model_mode,
                           "keyword_scope": (keyword_scope or KeywordScope.per_gpu).value,
                           "base_batch_size": base_batch_size, "time_unit": time_unit.value,
                           "ips_unit": ips_unit, "separator": separator, "position": position}
    if compliance_ruleset is not None and not compliance:
        raise UserInputError("--compliance-ruleset belongs to --compliance: add --compliance")
    if compliance:
        from harness.logparse import compliance as mlperf_compliance
        if not mlperf_compliance.available():
            mlperf_compliance.check(logs[0])  # raises the one-line error naming the package
    parsed_logs = []
    verdicts = {}
    for path in logs:
        parsed = harness.parse(
            path, format=format_, method=method.value if method else None,
            skip=skip if skip is not None else skip_steps, trim=trim, gpus=gpus,
            skip_records=skip_records, batch_size=batch_size or base_batch_size,
            seq_len=seq_len, precision=precision.value if precision else None, case=case,
            framework=framework, vendor=vendor, format_options=keyword_options,
            ingest_into=output if ingest else None, app=app_state(ctx).harness())
        parsed_logs.append(parsed)
        if compliance:
            verdicts[id(parsed)] = _compliance(parsed, path, compliance_ruleset)
        if not as_json:
            _print_parsed(parsed, _ingest_message(parsed, output))
            if compliance:
                _print_compliance(verdicts[id(parsed)])
    if as_json:
        documents = [
            {"result": json.loads(p.result.model_dump_json()), "legacy_index": p.legacy_index.model_dump(),
             "notes": p.notes, **({"ingest": _ingest_message(p, output)} if ingest else {}),
             **({"compliance": verdicts[id(p)]} if compliance else {})}
            for p in parsed_logs
        ]
        typer.echo(json.dumps(documents[0] if len(documents) == 1 else documents, indent=1,
                              ensure_ascii=False))
    if any(p.failed for p in parsed_logs):
        raise typer.Exit(EXIT_JOB_FAILED)
    return 0


def _compliance(parsed, path: Path, ruleset: str | None) -> dict:
    """MLPerf's checker's verdict on an MLPerf log; other formats have no MLPerf rules to check."""
    from harness.logparse import compliance as mlperf_compliance

    if parsed.format != "mllog":
        return {"checked": False, "reason": f"not an MLPerf log (format {parsed.format})"}
    verdict = mlperf_compliance.check(path, ruleset)
    return {"checked": True, **verdict.model_dump()}


def _print_compliance(verdict: dict) -> None:
    if not verdict["checked"]:
        typer.echo(f"  compliance: not checked, {verdict['reason']}")
        return
    typer.echo(f"  compliance ({verdict['checker']}, training ruleset {verdict['ruleset']}): "
               f"{'PASSED' if verdict['passed'] else 'FAILED'}")
    for message in verdict["messages"][:8]:
        typer.echo(f"    {message}")


def register(app: typer.Typer) -> None:
    app.command('parse', help=HELP)(parse_command)


def _ingest_message(parsed, output: Path) -> str | None:
    if parsed.ingested is None:
        return None
    if parsed.ingested:
        return f"ingested into {output / 'harness.db'} as {parsed.result.run_id}"
    return (f"already ingested (same sha256 {parsed.result.source_sha256[:12]}...): "
            "nothing recorded")


def _print_parsed(parsed, ingest_message: str | None) -> None:
    result = parsed.result
    lines = [f"{result.log_file}: format {parsed.format}, {parsed.records} steps "
             f"from {parsed.lines:,} lines"]
    if result.throughput:
        t = result.throughput
        lines.append(f"  FINAL_RESULT {t.value:,.3f} {t.unit} ({t.per_device:,.3f} per GPU x {result.nproc})")
        lines.append(f"  method {t.method}")
        if t.field:
            lines.append(f"  field {t.field} (the figure the framework printed)")
        if t.records_used is not None and t.first_step_used is not None:
            lines.append(f"  records used: {t.records_used}, iterations {t.first_step_used}..{t.last_step_used}")
        if t.samples_from:
            lines.append(f"  samples from: {t.samples_from}")
        if t.other is not None:
            printed = f", field {t.other.field}" if t.other.field else ""
            lines.append(f"  beside it: {t.other.value:,.3f} {t.unit} by {t.other.method}{printed}")
    spread = parsed.spread
    if spread is not None:
        lines.append(f"  spread of the records used: median {spread.median:,.3f}  p5 {spread.p5:,.3f}  "
                     f"p95 {spread.p95:,.3f}  CV {spread.cv:.2%}")
    if result.step_time:
        s = result.step_time
        lines.append(f"  step time: mean {s.mean:.4f} s  median {s.median:.4f} s  CV {s.cv:.2%} (n={s.n})")
    if result.time_to_train_min is not None:
        lines.append(f"  time to train {result.time_to_train_min:,.3f} min (run_start to run_stop)")
    if result.log_summary is not None and result.log_summary.sources:
        lines.append("  read from: " + "; ".join(f"{k} {_fact(result, k)} <- {v}"
                                                 for k, v in result.log_summary.sources.items()))
    if result.loss_first is not None:
        lines.append(f"  loss {result.loss_first:.4g} -> {result.loss_final:.4g}")
    if result.peak_memory_bytes:
        lines.append(f"  peak memory {result.peak_memory_bytes / 2**20:,.0f} MiB")
    lines.append(f"  status {result.status}" + (f": {result.failure_reason}" if result.failure_reason else ""))
    for warning in result.warnings:
        lines.append(f"  WARNING: {warning}")
    for note in parsed.notes:
        lines.append(f"  note: {note}")
    if ingest_message:
        lines.append(f"  {ingest_message}")
    typer.echo("\n".join(lines))
    typer.echo(json.dumps(parsed.legacy_index.model_dump(), ensure_ascii=False, indent=1))


def _fact(result, name: str):
    return {"gpus": result.nproc, "precision": result.precision, "batch_size": result.micro_batch_size,
            "seq_len": (result.log_summary.meta.get("seq_len") if result.log_summary else None)}.get(name)
