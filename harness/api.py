"""The public Python API: :func:`run`, :func:`parse` and :func:`results` (``import harness``).

These three functions are what ``harness run``, ``harness parse`` and ``harness results`` call;
they take plain values and return the pydantic models of :mod:`harness.models`. Bad input
raises :class:`~harness.errors.UserInputError` (the CLI's one-line errors, exit code 2) and a
framework or vendor that cannot run here :class:`~harness.errors.UnavailableError`; a run that
trained and failed is no exception: its result says ``status="failed"`` and why.

Everything else in the package is internal and may change without notice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from harness.models import BenchmarkResult, LegacyIndex

if TYPE_CHECKING:
    from harness.app import Harness
    from harness.runner.observer import RunObserver

Setting = str | int | float | bool

__all__ = ["ParsedLog", "RecordSpread", "parse", "results", "run"]


def run(
    case: str,
    *,
    vendor: str = "cpu",
    framework: str | None = None,
    scale: Literal["full", "smoke"] = "full",
    settings: Mapping[str, Setting] | None = None,
    run_mode: Literal["sp", "mp"] | None = None,
    nproc: int | None = None,
    nnodes: int | None = None,
    micro_batch_size: int | None = None,
    precision: str | None = None,
    max_steps: int | None = None,
    repeat: int = 1,
    output: str | Path = "results",
    data_dir: str | Path | None = None,
    env: Literal["auto", "current"] = "auto",
    wheelhouse: str | Path | None = None,
    hardware_config: str | None = None,
    job_id: str | None = None,
    node_rank: int | None = None,
    launcher: Literal["local", "slurm"] = "local",
    observer: RunObserver | None = None,
    app: Harness | None = None,
) -> BenchmarkResult:
    """Run one benchmark case and record it in ``output`` (its run folder and ``harness.db``).

    The arguments are ``harness run``'s options; ``settings`` are its ``--set key=value``
    overrides of the case's settings and hyper-parameters (``{"seq_len": 512, "seed": 7}``),
    each converted to the type of the case's default. ``scale="smoke"`` shrinks the case for a
    CPU. ``wheelhouse`` builds the framework's environment offline from that folder of wheels.
    ``observer`` receives progress events (default: none shown); ``app`` is the set of
    loaded plugins (default: every installed one, ``Harness.load()``).

    Returns the recorded result, also when the run failed, was interrupted or terminated
    (see its ``status`` and ``failure_reason``).
    """
    from harness.runner.pipeline import RunRequest, execute, plan

    request = RunRequest(
        case=case, vendor=vendor, framework=framework, scale=scale, run_mode=run_mode,
        nproc=nproc, nnodes=nnodes, micro_batch_size=micro_batch_size, precision=precision,
        max_steps=max_steps, set_pairs=setting_pairs(settings or {}), repeat=repeat,
        output=Path(output), data_dir=Path(data_dir) if data_dir is not None else None,
        env_mode=env, wheelhouse=Path(wheelhouse) if wheelhouse is not None else None,
        hardware_config=hardware_config, job_id=job_id, node_rank=node_rank,
        launcher=launcher,
    )
    app = app or _default_app()
    context = plan(app, request)
    return execute(app, context, request, observer).result


def setting_pairs(settings: Mapping[str, Setting]) -> list[str]:
    """``{"seq_len": 512, "fused": True}`` -> ``["seq_len=512", "fused=true"]`` (``--set``'s form)."""
    from harness.config_resolution import setting_text
    from harness.errors import UserInputError

    pairs = []
    for key, value in settings.items():
        if not isinstance(key, str) or not key.strip():
            raise UserInputError(f"settings: keys are setting names, got {key!r}")
        if not isinstance(value, (str, int, float, bool)):
            raise UserInputError(f"settings[{key!r}]: a string, number or boolean, got "
                                 f"{type(value).__name__}")
        pairs.append(f"{key}={setting_text(value)}")
    return pairs


class RecordSpread(BaseModel):
    """How the log's records that entered FINAL_RESULT are distributed."""

    model_config = ConfigDict(extra="forbid")

    median: float
    p5: float
    p95: float
    cv: float = Field(description="Coefficient of variation: stdev / mean.")


class ParsedLog(BaseModel):
    """One training log read into the uniform result."""

    model_config = ConfigDict(extra="forbid")

    result: BenchmarkResult
    legacy_index: LegacyIndex = Field(description="The benchmark repositories' index JSON.")
    format: str = Field(description="The log format it was read with.")
    lines: int = Field(description="Lines read.")
    records: int = Field(description="Step records found.")
    spread: RecordSpread | None = Field(None, description="Of the records that entered FINAL_RESULT.")
    notes: list[str] = Field(default_factory=list, description="What the reader noticed.")
    ingested: bool | None = Field(
        None, description="With ingest_into: True when recorded, False when the same log "
                          "(same sha256) was recorded before; None without ingest_into.")

    @property
    def failed(self) -> bool:
        """Whether the log shows a failed run (the legacy index's JOB_FAIL_FLAG)."""
        return self.legacy_index.JOB_FAIL_FLAG == 1


def parse(
    path: str | Path,
    *,
    format: str | None = None,
    method: str | None = None,
    skip: int | None = None,
    skip_records: int | None = None,
    trim: int | None = None,
    gpus: int | None = None,
    batch_size: int | None = None,
    seq_len: int | None = None,
    precision: str | None = None,
    case: str | None = None,
    framework: str | None = None,
    vendor: str | None = None,
    format_options: Mapping[str, object] | None = None,
    ingest_into: str | Path | None = None,
    app: Harness | None = None,
) -> ParsedLog:
    """Read an existing training log (any registered format, detected unless ``format`` is
    given) into the uniform result, as ``harness parse`` does; the arguments are its options
    (``format_options`` holds the keyword-mode ones). With ``ingest_into`` (a results folder)
    the result is also recorded there, once per log content."""
    from harness.ingest import ParseRequest, ingest, parse_log_file

    request = ParseRequest(
        path=Path(path), format=format, method=method, skip=skip, trim=trim, gpus=gpus,
        skip_records=skip_records, batch_size=batch_size, seq_len=seq_len, precision=precision,
        case=case, framework=framework, vendor=vendor, format_options=dict(format_options or {}))
    outcome = parse_log_file((app or _default_app()).registry, request)
    ingested = ingest(outcome, Path(ingest_into))[0] if ingest_into is not None else None
    agg = outcome.aggregate
    spread = (RecordSpread(median=agg.median, p5=agg.p5, p95=agg.p95, cv=agg.cv)
              if agg is not None and None not in (agg.median, agg.p5, agg.p95, agg.cv) else None)
    return ParsedLog(result=outcome.result, legacy_index=outcome.legacy, format=outcome.format,
                     lines=outcome.streamed.lines, records=outcome.streamed.summary.count,
                     spread=spread, notes=list(outcome.notes), ingested=ingested)


def results(
    output: str | Path = "results",
    *,
    run_id: str | None = None,
    case: str | Sequence[str] | None = None,
    framework: str | Sequence[str] | None = None,
    vendor: str | Sequence[str] | None = None,
    status: str | Sequence[str] | None = None,
    since: datetime | None = None,
    limit: int | None = None,
) -> list[BenchmarkResult]:
    """The results recorded in ``output`` (a results folder), newest first.

    ``run_id`` picks one run by its id or a unique prefix (an empty list when none or several
    match); each filter is a value or a list of values; ``since`` keeps runs started at or
    after it (a naive datetime is UTC); ``limit`` caps the count. Raises UserInputError when
    ``output`` holds no results database.
    """
    from datetime import timezone

    from harness.errors import UserInputError
    from harness.store import DB_NAME, ResultStore

    output = Path(output)
    if not (output / DB_NAME).is_file():
        raise UserInputError(f"no results database at {output / DB_NAME}; pass --output with the "
                             "folder `harness run`/`harness sweep` wrote to")
    store = ResultStore(output)
    if run_id is not None:
        found = store.get(run_id)
        return [found] if found is not None else []
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=timezone.utc)
    return store.list(case=_values(case), framework=_values(framework), vendor=_values(vendor),
                      status=_values(status), since=since, limit=limit)


def _values(value: str | Sequence[str] | None) -> list[str]:
    return [value] if isinstance(value, str) else list(value or [])


def _default_app() -> Harness:
    from harness.app import Harness

    return Harness.load()
