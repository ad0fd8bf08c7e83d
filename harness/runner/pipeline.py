"""One benchmark run, end to end: request -> resolved config -> env -> data -> launch -> result.

The steps live in modules of their own: planning (request -> RunContext), attempt (the
repeats, each launched and its log read), record (the result built and written) and nodes
(multi-node records). This module runs them in order and is where callers import from.
"""

from __future__ import annotations

import shutil
from contextlib import nullcontext
from typing import TYPE_CHECKING

from pydantic_core import PydanticSerializationError

from harness.errors import HarnessError, StorageError, UnavailableError, UserInputError
from harness.models.context import RunContext
from harness.results_io import atomic_write_text
from harness.runner.attempt import Attempt, config_log_hints, log_hints, read_log, run_repeats
from harness.runner.nodes import gather_nodes, open_job_link, record_node, send_record
from harness.runner.observer import RunObserver
from harness.runner.planning import check_paths, plan, replanned
from harness.runner.record import record_result
from harness.runner.request import RunReport, RunRequest, utcnow
from harness.runner.sealed_launch import CONFIG_FILE, config_text
from harness.runner.signals import (
    Terminated,
    deferred_signals,
    raise_for,
    stop_signals_raise,
    stop_wrapped_in,
)

if TYPE_CHECKING:
    from harness.app import Harness

__all__ = ["RunObserver", "RunReport", "RunRequest", "check_paths", "config_log_hints", "execute",
           "log_hints", "plan", "read_log", "replanned", "run_benchmark"]


def execute(
    harness: Harness,
    context: RunContext,
    request: RunRequest,
    observer: RunObserver | None = None,
    *,
    unsupported: list[str] | None = None,
) -> RunReport:
    """Run all ``context.repeats`` repeats of a planned run and record the result (also when
    it fails, is interrupted or terminated, or the disk fills up) under ``request.output``.

    ``unsupported`` is what ``unsupported_reason`` already answered for this run's config
    (a sweep asks when it plans its points); None asks the plugins now. Asked once: a
    plugin's answer may be costly, and two asks could disagree.

    A plugin's one-line error raised before anything trained (a missing package, a layout
    that does not fit) removes the run folder again and propagates. Raises
    :class:`~harness.errors.StorageError` when the result could not be written everywhere.
    """
    reasons = (harness.router().unsupported_reasons(context) if unsupported is None
               else unsupported)
    if reasons:  # said before anything is launched or written, as a sweep skips such a point
        raise UnavailableError("; ".join(reasons))
    observer = observer or RunObserver()
    with stop_signals_raise():
        run_dir = context.run_dir
        try:
            run_dir.mkdir(parents=True, exist_ok=False)
        except FileExistsError:
            raise UserInputError(_folder_exists_message(context)) from None
        except OSError as exc:
            raise StorageError(f"could not create the run folder {run_dir}: {exc.strerror or exc}") from None
        attempt = Attempt(started=utcnow())
        link = open_job_link(context)
        try:
            return _run_and_record(harness, context, request, observer, attempt, link)
        finally:
            if link is not None:
                link.close()


def _run_and_record(harness: Harness, context: RunContext, request: RunRequest,
                    observer: RunObserver, attempt: Attempt, link) -> RunReport:
    run_dir = context.run_dir
    with watching(link):  # another node's failure stops this node's ranks
        try:
            try:
                atomic_write_text(run_dir / CONFIG_FILE, config_text(context.config))
                run_repeats(harness, context, observer, attempt)
            except PydanticSerializationError as exc:
                stop = stop_wrapped_in(exc)
                if stop is None:
                    raise
                raise stop from exc
        except HarnessError as exc:
            if not attempt.launched:
                shutil.rmtree(run_dir, ignore_errors=True)  # nothing ran: no half run folder
                _announce(link, f"{attempt.stage} failed: {exc}")
                raise
            attempt.fail("failed", f"{attempt.stage} failed: {exc}")
        except KeyboardInterrupt:
            attempt.fail("interrupted", f"interrupted by the user (SIGINT) during {attempt.stage}")
        except Terminated as exc:
            attempt.fail("terminated", f"{exc} during {attempt.stage}")
        except OSError as exc:  # a full disk or a missing file while preparing the run
            where = f": {exc.filename}" if exc.filename else ""
            attempt.fail("failed", f"{attempt.stage} failed: {exc.strerror or exc}{where}")
    if attempt.status:
        _announce(link, attempt.reason or attempt.status)
    nodes = gather_nodes(context, attempt, link) if link is not None and not context.node_rank else []
    # Whatever signals arrive now, the result is written; a stop signal that came while
    # the run was already stopping means nothing more.
    with deferred_signals() as held:
        if context.node_rank:
            report = record_node(context, attempt)
        else:
            report = record_result(context, request, attempt, nodes)
    if held and report.result.status not in ("interrupted", "terminated"):
        raise_for(held[0])
    if context.node_rank and link is not None:
        report.note = send_record(context, report, link)
    observer.recorded(report)
    return report


def _announce(link, reason: str) -> None:
    """This node failed: the job's other nodes stop theirs (unless it was stopped by theirs)."""
    if link is not None and link.peer_failure is None:
        link.announce_failure(reason)


def watching(link):
    return link.watching() if link is not None else nullcontext()


def _folder_exists_message(context: RunContext) -> str:
    if context.config.settings.nnodes > 1:
        return (f"job {context.job_id!r} already has a run folder {context.run_dir}: a job id names "
                "one job, so each run of a multi-node job needs a new --job-id (or HARNESS_JOB_ID) "
                "on every node; nothing was overwritten")
    return f"run folder {context.run_dir} already exists; nothing was overwritten"


def run_benchmark(
    harness: Harness,
    request: RunRequest,
    observer: RunObserver | None = None,
) -> RunReport:
    """Plan and execute one run in one call, for library users and tests.

    The CLI does not come through here: ``harness run`` (``harness/cli/run.py``) and sweeps
    call :func:`plan` and :func:`execute` themselves.
    """
    context = plan(harness, request)
    return execute(harness, context, request, observer)

