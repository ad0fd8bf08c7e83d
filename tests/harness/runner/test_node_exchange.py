"""Node records sent to node 0 over TCP: received, another job's refused, missing ones waited
for a bounded time, a taken port noted."""

from __future__ import annotations

import socket
import time

from harness.models.result import NodeRecord
from harness.runner.node_exchange import NodeRecordCollector, send_node_record


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _record(job: str, rank: int, status: str = "success") -> NodeRecord:
    return NodeRecord(job_id=job, job_run_id=f"{job}-case", node_rank=rank, nnodes=3, host="<host>",
                      status=status, exit_code=0 if status == "success" else 1)


def test_records_of_the_job_arrive_and_others_are_refused():
    port = _port()
    collector = NodeRecordCollector("job-a", 3, port)
    collector.start()
    try:
        assert collector.problem is None
        assert send_node_record(_record("job-a", 1), "127.0.0.1", port, deadline_s=5) is None
        refused = send_node_record(_record("job-b", 2), "127.0.0.1", port, deadline_s=5)
        assert refused and "refused" in refused
        started = time.monotonic()
        received = collector.wait(1.0)  # node 2 never sends: bounded wait
        assert time.monotonic() - started < 5
        assert list(received) == [1] and received[1].status == "success"
        assert send_node_record(_record("job-a", 2, "failed"), "127.0.0.1", port, deadline_s=5) is None
        assert collector.wait(5.0)[2].status == "failed"
    finally:
        collector.close()


def test_no_node_0_and_a_taken_port_are_reported_not_raised():
    port = _port()
    problem = send_node_record(_record("job-a", 1), "127.0.0.1", port, deadline_s=0.5)
    assert problem and "could not reach node 0" in problem
    with socket.socket() as taken:
        taken.bind(("", port))
        taken.listen(1)
        collector = NodeRecordCollector("job-a", 2, port)
        collector.start()
        assert collector.problem and f"port {port}" in collector.problem
        assert collector.wait(0.1) == {}
        collector.close()
