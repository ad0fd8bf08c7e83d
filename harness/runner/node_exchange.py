"""How node 0 of a multi-node job learns how the other nodes ended, without a shared file
system: node 0's harness listens one port above the job's rendezvous port while the job
runs; every other node sends its :class:`~harness.models.result.NodeRecord` there (one JSON
line) when its launch has ended. Node 0 waits a bounded grace for the records it lacks.

Plain TCP from the standard library, so it works whatever framework trains (the harness
itself imports no framework) and whatever file systems the nodes share. A record for
another job (two jobs whose ports collide) is refused, not mixed in.
"""

from __future__ import annotations

import json
import socket
import threading
import time

from pydantic import ValidationError

from harness.models.result import NodeRecord

MAX_RECORD_BYTES = 64 * 1024
#: How long node 0 waits, after its own launch ended, for the records it has not received.
RECORD_GRACE_S = 20.0
#: How long another node keeps trying to reach node 0 with its record.
SEND_DEADLINE_S = 20.0


class NodeRecordCollector:
    """Node 0's side: accepts the records of nodes 1..nnodes-1 of ``job_id`` in a thread."""

    def __init__(self, job_id: str, nnodes: int, port: int):
        self.job_id, self.nnodes, self.port = job_id, nnodes, port
        self.records: dict[int, NodeRecord] = {}
        self.problem: str | None = None
        self._changed = threading.Condition()
        self._socket: socket.socket | None = None

    def start(self) -> None:
        """Listen on every interface (the other nodes reach node 0 by MASTER_ADDR); a port that
        is taken is noted, not fatal: the job trains, only the records are missing."""
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("", self.port))
            sock.listen(16)
            sock.settimeout(0.5)
        except OSError as exc:
            self.problem = f"could not listen for node records on port {self.port}: {exc.strerror or exc}"
            return
        self._socket = sock
        threading.Thread(target=self._serve, name="harness-node-records", daemon=True).start()

    def _serve(self) -> None:
        sock = self._socket
        while sock is not None and self._socket is not None:
            try:
                connection, _ = sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            with connection:
                connection.settimeout(5)
                record = self._read(connection)
                reply = b"ok\n" if record else b"refused\n"
                try:
                    connection.sendall(reply)
                except OSError:
                    pass
            if record:
                with self._changed:
                    self.records[record.node_rank] = record
                    self._changed.notify_all()

    def _read(self, connection: socket.socket) -> NodeRecord | None:
        data = b""
        try:
            while not data.endswith(b"\n") and len(data) < MAX_RECORD_BYTES:
                chunk = connection.recv(4096)
                if not chunk:
                    break
                data += chunk
            record = NodeRecord.model_validate(json.loads(data))
        except (OSError, ValueError, ValidationError):
            return None
        if record.job_id != self.job_id or not 0 < record.node_rank < self.nnodes:
            return None
        return record

    def wait(self, grace_s: float) -> dict[int, NodeRecord]:
        """The records received, after waiting up to ``grace_s`` for the missing ones."""
        deadline = time.monotonic() + grace_s
        with self._changed:
            while len(self.records) < self.nnodes - 1 and self._socket is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(min(left, 0.5))
            return dict(self.records)

    def close(self) -> None:
        sock, self._socket = self._socket, None
        if sock is not None:
            sock.close()


def send_node_record(record: NodeRecord, host: str, port: int,
                     deadline_s: float = SEND_DEADLINE_S) -> str | None:
    """Send this node's record to node 0; None when node 0 took it, else why not."""
    payload = record.model_dump_json().encode() + b"\n"
    deadline = time.monotonic() + deadline_s
    problem = "node 0 did not answer"
    while True:
        try:
            with socket.create_connection((host, port), timeout=5) as connection:
                connection.sendall(payload)
                connection.shutdown(socket.SHUT_WR)
                answer = connection.recv(64)
            if answer.startswith(b"ok"):
                return None
            return f"node 0 at port {port} refused the record (another job's port?)"
        except OSError as exc:
            problem = f"could not reach node 0 at port {port}: {exc.strerror or exc}"
        if time.monotonic() > deadline:
            return problem
        time.sleep(0.5)
