"""The multi-node parts of a run: each node's record of how its launch ended, node 0
gathering the others' records, and a node other than node 0 recording and sending its own."""

from __future__ import annotations

from harness.errors import StorageError
from harness.fingerprint import environment_fingerprint
from harness.launch import split_endpoint
from harness.models.context import RunContext
from harness.models.result import NodeRecord
from harness.result_builder import build_result
from harness.results_io import atomic_write_text
from harness.runner.attempt import Attempt
from harness.runner.request import RunReport, utcnow
from harness.runner.signals import Terminated

NODE_RECORD = "node.json"


def node_record(context: RunContext, attempt: Attempt) -> NodeRecord:
    """This node's part of a multi-node job: how its launch ended (naming the ranks the
    launcher says failed), its scrubbed host name and a digest of its log."""
    import hashlib
    import socket

    from harness.launch import torchrun_failed_ranks
    from harness.runner.scrub import scrub_line

    outcome = attempt.outcomes[-1] if attempt.outcomes else None
    status = outcome.status if outcome else (attempt.status or "failed")
    if context.node_rank and attempt.status and status == "success":
        status = attempt.status  # something after the launch failed on this node
    log = context.run_dir / ("train.log" if len(attempt.outcomes) <= 1
                             else f"train.r{len(attempt.outcomes)}.log")
    digest, failed_ranks = None, []
    if log.exists():
        data = log.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        failed_ranks = torchrun_failed_ranks(data[-64 * 1024:].decode("utf-8", "replace").splitlines())
    host = socket.gethostname()
    reason = None
    if status != "success":
        reason = outcome.reason if outcome and outcome.reason else attempt.reason
        if failed_ranks:  # the launcher named the ranks: they say more than its traceback
            reason = "; ".join(failed_ranks)
    return NodeRecord(
        job_id=context.job_id or "", job_run_id=context.run_id.rsplit(".node", 1)[0],
        node_rank=context.node_rank, nnodes=context.config.settings.nnodes,
        host=scrub_line(host), host_digest=hashlib.sha256(host.encode()).hexdigest()[:12],
        status=status, exit_code=outcome.exit_code if outcome else None, reason=reason,
        failed_ranks=failed_ranks, log_file=log.name if log.exists() else None, log_sha256=digest,
    )


def open_job_link(context: RunContext):
    """Every node of a multi-node job joins the job's store (node 0 hosts it, one port above
    the rendezvous port) while the job runs: see :mod:`harness.runner.job_link`."""
    if context.config.settings.nnodes == 1 or not context.rendezvous_endpoint or not context.job_id:
        return None
    from harness.runner.job_link import JobLink, job_secret

    host, port = split_endpoint(context.rendezvous_endpoint)
    link = JobLink(context.job_id, context.config.settings.nnodes, context.node_rank, host,
                   port + 1, job_secret())
    link.start()
    return link


def gather_nodes(context: RunContext, attempt: Attempt, link) -> list[NodeRecord]:
    """Node 0's record and the other nodes' (waiting a bounded grace for the missing ones; not
    at all when the user stopped the run); a node that sent none is listed as missing."""
    from harness.runner.job_link import RECORD_GRACE_S

    grace = 0.0 if attempt.status in ("interrupted", "terminated") else RECORD_GRACE_S
    try:
        received = link.wait_records(grace)
    except KeyboardInterrupt:
        attempt.fail("interrupted", "interrupted by the user (SIGINT) while gathering node records")
        received = dict(link.records)
    except Terminated as exc:
        attempt.fail("terminated", f"{exc} while gathering node records")
        received = dict(link.records)
    nodes = [node_record(context, attempt)]
    for rank in range(1, context.config.settings.nnodes):
        if rank in received:
            nodes.append(received[rank])
            continue
        # a node that failed before it had anything to record still said why
        failure = link.failures.get(rank)
        nodes.append(NodeRecord(
            job_id=context.job_id or "", job_run_id=context.run_id, node_rank=rank,
            nnodes=context.config.settings.nnodes, host="<unknown>",
            status="failed" if failure else "missing",
            reason=failure or link.problem or f"no node record reached node 0 within {grace:g} s "
                                              "after its launch ended"))
    return nodes


def send_record(context: RunContext, report: RunReport, link) -> str | None:
    """Another node hands node 0 its record through the job's store."""
    record = NodeRecord.model_validate_json((report.run_dir / NODE_RECORD).read_text())
    problem = link.deliver(record)
    return f"node record not delivered to node 0: {problem}" if problem else None


def record_node(context: RunContext, attempt: Attempt) -> RunReport:
    """A node other than node 0 of a multi-node job: its processes' outcome, not a result
    (the training figures are node 0's); a node record pointing at the job's result."""
    record = node_record(context, attempt)
    try:
        atomic_write_text(context.run_dir / NODE_RECORD, record.model_dump_json(indent=1) + "\n")
    except OSError as exc:
        raise StorageError(f"could not write the node record in {context.run_dir}: "
                           f"{exc.strerror or exc}") from None
    result = _node_result(context, attempt, record.status, record.reason)
    return RunReport(result=result, run_dir=context.run_dir, legacy_path=context.run_dir / NODE_RECORD,
                     node_rank=context.node_rank, job_id=context.job_id)


def _node_result(context: RunContext, attempt: Attempt, status: str, reason: str | None):
    """The in-memory result the CLI reports for a node record (not written, not stored)."""
    return build_result(
        run_id=context.run_id, config=context.config, reading=None, log_format=None, final=None,
        unit=context.case.unit, step_time=None, status=status,  # type: ignore[arg-type]
        failure_reason=reason,
        framework_version=attempt.env.framework_version if attempt.env else None,
        environment=environment_fingerprint(attempt.env), started_at=attempt.started,
        finished_at=utcnow(), log_file="train.log", peak_memory_bytes=None,
        devices=context.devices, dataset=attempt.dataset, repeats=attempt.repeats,
    )
