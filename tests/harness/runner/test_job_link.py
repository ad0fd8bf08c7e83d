"""The nodes' link through the job's store (a real c10d TCPStore on localhost): records
arrive and are acknowledged, forged ones and forged failures change nothing, a slow or
garbage connection holds nobody up, a failure reaches the other nodes, a missing node is
waited for a bounded time, a taken port is noted."""

from __future__ import annotations

import json
import socket
import time

import pytest

from harness.errors import UserInputError
from harness.models.result import NodeRecord

pytest.importorskip("torch.distributed")

from harness.runner.job_link import JOB_SECRET_ENV, JobLink, job_secret  # noqa: E402

SECRET = b"0123456789abcdef0123456789abcdef"


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _record(job: str, rank: int, status: str = "success", reason: str | None = None) -> NodeRecord:
    return NodeRecord(job_id=job, job_run_id=f"{job}-case", node_rank=rank, nnodes=3, host="<host>",
                      status=status, exit_code=0 if status == "success" else 1, reason=reason)


def _links(port: int, nnodes: int = 3, job: str = "job-a", secret: bytes = SECRET):
    links = [JobLink(job, nnodes, rank, "127.0.0.1", port, secret) for rank in range(nnodes)]
    for link in links:
        link.start()
    return links


def _forge(port: int, key: str, line: str) -> None:
    """Someone who reaches the port writes into the store with the store's own client."""
    from datetime import timedelta

    from torch.distributed import TCPStore

    TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=5)).append(key, line)


def test_records_arrive_forged_ones_change_nothing_and_a_missing_node_is_waited_for_boundedly():
    port = _port()
    node0, node1, node2 = _links(port)
    try:
        assert node0.problem is None
        # forged before the genuine one: no MAC, a MAC under another key, another job's record
        forged = _record("job-a", 1, "failed", "forged reason").model_dump_json()
        _forge(port, "harness/job-a/record/1", json.dumps({"rank": 1, "payload": forged, "mac": "00"}) + "\n")
        other = JobLink("job-a", 3, 1, "127.0.0.1", port, b"another-secret-of-16+")
        _forge(port, "harness/job-a/record/1", other._sign("record", forged))
        _forge(port, "harness/job-a/record/1", "not json at all\n")
        assert node1.deliver(_record("job-a", 1), deadline_s=20) is None
        started = time.monotonic()
        received = node0.wait_records(1.0)  # node 2 never sends: bounded wait
        assert time.monotonic() - started < 5
        assert list(received) == [1] and received[1].status == "success" and received[1].reason is None
        # forged after the genuine one: node 0 keeps the first valid record
        _forge(port, "harness/job-a/record/1", other._sign("record", forged))
        assert node2.deliver(_record("job-a", 2, "failed", "real"), deadline_s=20) is None
        received = node0.wait_records(5.0)
        assert received[1].status == "success" and received[2].reason == "real"
        # a forged failure stops nobody
        _forge(port, "harness/job-a/failed", other._sign("failed", "forged failure"))
        time.sleep(1.5)
        assert node0.peer_failure is None and node1.peer_failure is None
    finally:
        for link in (node0, node1, node2):
            link.close()


def test_a_slow_and_a_garbage_connection_hold_nobody_up():
    port = _port()
    node0, node1 = _links(port, nnodes=2)
    slow = socket.create_connection(("127.0.0.1", port))
    garbage = socket.create_connection(("127.0.0.1", port))
    try:
        slow.sendall(b"\x01")  # a byte, then nothing: a single-threaded server would wait on it
        garbage.sendall(b"GET / HTTP/1.0\r\n\r\n" * 100)
        assert node1.deliver(_record("job-a", 1), deadline_s=20) is None
        assert node0.wait_records(5.0)[1].status == "success"
    finally:
        slow.close()
        garbage.close()
        node0.close()
        node1.close()


def test_a_failure_reaches_the_other_nodes_but_not_the_one_that_failed():
    port = _port()
    node0, node1 = _links(port, nnodes=2)
    try:
        node1.announce_failure("rank 1 (local rank 0): killed by SIGKILL (out of memory?)")
        deadline = time.monotonic() + 20
        while node0.peer_failure is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert node0.peer_failure == "node 1 failed: rank 1 (local rank 0): killed by SIGKILL (out of memory?)"
        assert node1.peer_failure is None
    finally:
        node0.close()
        node1.close()


def test_the_store_listens_on_the_master_address_only_and_a_taken_port_is_noted():
    port = _port()
    node0 = JobLink("job-a", 2, 0, "127.0.0.1", port, SECRET)
    node0.start()
    try:
        addresses = {a for a in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)
                     if not a[4][0].startswith("127.")}
        for address in addresses:  # another interface of this host: nothing listens there
            with pytest.raises(OSError):
                socket.create_connection((address[4][0], port), timeout=2).close()
        taken = JobLink("job-b", 2, 0, "127.0.0.1", port, SECRET)
        taken.start()
        assert taken.problem and "could not start the job's store" in taken.problem
    finally:
        node0.close()
    node1 = JobLink("job-a", 2, 1, "127.0.0.1", port, SECRET)
    problem = node1.deliver(_record("job-a", 1), deadline_s=1.0)
    node1.close()
    assert problem and "within 1 s" in problem


def test_the_job_secret_is_required(monkeypatch):
    monkeypatch.delenv(JOB_SECRET_ENV, raising=False)
    with pytest.raises(UserInputError, match="HARNESS_JOB_SECRET on every node"):
        job_secret()
    monkeypatch.setenv(JOB_SECRET_ENV, "short")
    with pytest.raises(UserInputError, match="has 5 characters"):
        job_secret()
    monkeypatch.setenv(JOB_SECRET_ENV, "x" * 32)
    assert job_secret() == b"x" * 32
