"""How the nodes of a multi-node job talk to each other while it runs and after: every node
says at once when it failed (the others stop their ranks instead of hanging in a collective
until the framework's watchdog), and every node other than node 0 hands node 0 its
:class:`~harness.models.result.NodeRecord` when it has ended.

**The store.** The messages go through a c10d ``TCPStore`` of ``torch.distributed``, hosted by
node 0's harness one port above the job's rendezvous port and bound to ``MASTER_ADDR`` only
(the store gets a socket the harness bound itself). It is the store torchrun's own
rendezvous uses: a server that serves every connection at once from an event loop (a client
that connects and sends one byte every few seconds, or garbage, holds nobody up), whose
every operation here is bounded by a deadline. The standard library has no such store, and
a home-made protocol is what this replaced; a framework-neutral one would have to be
written, and Paddle's store would tie the core to Paddle. So ``torch`` is imported here
only, lazily, and only for a job of several nodes: a multi-node job needs ``torch``
importable by the harness (it is refused before anything runs otherwise).

**Authentication.** The store itself lets anyone who reaches the port read and write. So
every message carries an HMAC-SHA256 under the job's secret, ``HARNESS_JOB_SECRET``, which
every node gets the way it gets ``MASTER_ADDR`` (exported on each node; ``harness slurm
script`` makes one per job); the MAC covers the job id, the kind of message and the sending
node's rank. A message without a valid MAC is ignored: a forged record or failure changes
nothing. Messages are appended, never replaced, and node 0 keeps the first valid record of
each node; a node re-sends its record until node 0's signed acknowledgement arrives. What
someone who can reach the port can still do is hide messages (delete the keys again and
again, flood them): the record is then missing, never false. The secret never reaches the
training processes' environment.

**Bounds.** A node that fails announces it at once; the other nodes look every
:data:`POLL_S` seconds and then stop their ranks (SIGTERM, SIGKILL after
:data:`PEER_STOP_GRACE_S`), so every node of the job ends within about
``POLL_S + PEER_STOP_GRACE_S`` seconds (plus the process tree's reaping) after the failed
node's harness saw its launch end. The training scripts' collective timeout (the run's
``rendezvous_timeout_s``) is a second line for a node whose harness died too.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import socket
import sys
import threading
import time
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import timedelta
from typing import Iterator

from pydantic import ValidationError

from harness.errors import UserInputError
from harness.models.result import NodeRecord

JOB_SECRET_ENV = "HARNESS_JOB_SECRET"
MIN_SECRET_CHARS = 16
#: Every single store operation (connect, get, append) ends within this.
STORE_OP_TIMEOUT_S = 5.0
#: How often a node looks at the store for the others' failures, records and acknowledgements.
POLL_S = 0.5
#: SIGTERM to SIGKILL, when a node stops its ranks because another node failed.
PEER_STOP_GRACE_S = 3.0
#: How long node 0 waits, after its own launch ended, for the records it has not received.
RECORD_GRACE_S = 20.0
#: How long another node keeps trying to hand node 0 its record.
SEND_DEADLINE_S = 20.0
#: How often a node re-sends its record while node 0 has not acknowledged it.
RESEND_S = 2.0
#: How long node 0 keeps the store, at the end, for nodes to read its acknowledgement.
ACK_LINGER_S = 5.0
MAX_MESSAGE_CHARS = 64 * 1024

_current: ContextVar[JobLink | None] = ContextVar("harness_job_link", default=None)


def job_secret() -> bytes:
    """The job's HMAC key from the environment; a one-line error when it is missing or short."""
    secret = os.environ.get(JOB_SECRET_ENV, "")
    if len(secret) < MIN_SECRET_CHARS:
        state = "is not set" if not secret else f"has {len(secret)} characters"
        raise UserInputError(
            f"--nnodes > 1 needs the job's secret in {JOB_SECRET_ENV} on every node (it {state}; "
            f"at least {MIN_SECRET_CHARS} characters, the same on every node, e.g. "
            f"export {JOB_SECRET_ENV}=$(openssl rand -hex 32)): it authenticates what the nodes "
            "tell each other")
    return secret.encode()


def check_multinode_ready() -> None:
    """Refuse a multi-node run before anything runs when its nodes could not talk."""
    job_secret()
    try:
        _tcp_store_class()
    except ImportError as exc:
        raise UserInputError(f"--nnodes > 1 needs torch importable by the harness (the nodes talk "
                             f"through torch.distributed's TCPStore): {exc}") from None


def _tcp_store_class():
    """torch's TCPStore, imported here only. A client retrying a node 0 that is not up yet
    makes c10d log each try with a C++ stack to stderr; the harness says it in one line
    itself, so c10d's logging is quiet in the harness process (not in the ranks: the
    variable is put back once torch read it)."""
    if "torch" not in sys.modules:
        saved = os.environ.get("TORCH_CPP_LOG_LEVEL")
        os.environ["TORCH_CPP_LOG_LEVEL"] = "FATAL"
        try:
            import torch.distributed  # noqa: F401
        finally:
            if saved is None:
                os.environ.pop("TORCH_CPP_LOG_LEVEL", None)
            else:
                os.environ["TORCH_CPP_LOG_LEVEL"] = saved
    from torch.distributed import TCPStore

    return TCPStore


def peer_failure() -> str | None:
    """Why this node's launch must stop because another node of its job failed, else None.
    The core's launch loop asks this while the ranks run."""
    link = _current.get()
    return link.peer_failure if link is not None else None


class JobLink:
    """One node's end of the job's store: node 0 hosts it, the others connect to it."""

    def __init__(self, job_id: str, nnodes: int, node_rank: int, host: str, port: int,
                 secret: bytes):
        self.job_id, self.nnodes, self.node_rank = job_id, nnodes, node_rank
        self.host, self.port, self._secret = host, port, secret
        self.records: dict[int, NodeRecord] = {}
        #: what each other node that failed said about it (the first it said)
        self.failures: dict[int, str] = {}
        self.peer_failure: str | None = None
        self.problem: str | None = None
        self._store = None
        self._lock = threading.Lock()  # one store operation at a time on this client
        self._changed = threading.Condition()
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self._outgoing: str | None = None  # this node's signed record, until acknowledged
        self._acknowledged = threading.Event()
        self._acked: set[int] = set()  # node 0: the nodes whose records it acknowledged
        self._seen: set[int] = set()  # ... and which said they read the acknowledgement

    # ------------------------------------------------------------------ life cycle

    def start(self) -> None:
        """Node 0 starts the store (a port that cannot be bound is noted, not fatal: the job
        trains, only the records are missing); every node starts watching it."""
        if self.node_rank == 0:
            try:
                self._store = self._host_store()
            except (OSError, RuntimeError) as exc:
                self.problem = (f"could not start the job's store at {self.host}:{self.port}: "
                                f"{getattr(exc, 'strerror', None) or exc}")
                return
        self._thread = threading.Thread(target=self._watch, name="harness-job-link", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Node 0 first lets the nodes it acknowledged read the acknowledgement (bounded by
        :data:`ACK_LINGER_S`). The watcher is joined, not abandoned: each of its operations
        ends within :data:`STORE_OP_TIMEOUT_S`, and a thread left inside the store's C++
        code when the interpreter exits would abort it."""
        if self.node_rank == 0 and self._thread is not None:
            deadline = time.monotonic() + ACK_LINGER_S
            while self._acked - self._seen and time.monotonic() < deadline:
                time.sleep(POLL_S / 5)
        self._closed.set()
        if self._thread is not None:
            self._thread.join()
        with self._lock:
            self._store = None  # node 0: the server stops with its last reference

    @contextmanager
    def watching(self) -> Iterator[JobLink]:
        """While inside, the core's launch loop stops the ranks when another node failed."""
        token = _current.set(self)
        try:
            yield self
        finally:
            _current.reset(token)

    def _host_store(self):
        TCPStore = _tcp_store_class()

        infos = socket.getaddrinfo(self.host, self.port, type=socket.SOCK_STREAM)
        family, _, _, _, address = infos[0]
        listener = socket.socket(family, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            listener.bind(address)  # MASTER_ADDR only, not every interface
            listener.listen(128)
        except OSError:
            listener.close()
            raise
        try:
            store = TCPStore(self.host, self.port, is_master=True, wait_for_workers=False,
                             timeout=timedelta(seconds=STORE_OP_TIMEOUT_S),
                             master_listen_fd=listener.fileno(), use_libuv=True)
        except BaseException:
            listener.close()
            raise
        listener.detach()  # the store's server owns the socket now, and closes it
        return store

    def _connect(self) -> None:
        TCPStore = _tcp_store_class()

        store = TCPStore(self.host, self.port, is_master=False, wait_for_workers=False,
                         timeout=timedelta(seconds=STORE_OP_TIMEOUT_S), use_libuv=True)
        with self._lock:
            self._store = store

    # ------------------------------------------------------------------ messages

    def _key(self, name: str) -> str:
        return f"harness/{self.job_id}/{name}"

    def _mac(self, kind: str, rank: int, payload: str) -> str:
        message = "\0".join((kind, self.job_id, str(rank), payload)).encode()
        return hmac.new(self._secret, message, hashlib.sha256).hexdigest()

    def _sign(self, kind: str, payload: str) -> str:
        return json.dumps({"rank": self.node_rank, "payload": payload,
                           "mac": self._mac(kind, self.node_rank, payload)}) + "\n"

    def _verified(self, kind: str, data: bytes) -> list[tuple[int, str]]:
        """The (rank, payload) of every message of ``kind`` in ``data`` whose MAC is valid."""
        found = []
        for line in data.decode("utf-8", "replace").splitlines():
            if len(line) > MAX_MESSAGE_CHARS:
                continue
            try:
                message = json.loads(line)
                rank, payload, mac = message["rank"], message["payload"], message["mac"]
            except (ValueError, TypeError, KeyError):
                continue
            if (isinstance(rank, int) and isinstance(payload, str) and isinstance(mac, str)
                    and 0 <= rank < self.nnodes
                    and hmac.compare_digest(mac, self._mac(kind, rank, payload))):
                found.append((rank, payload))
        return found

    def _read(self, name: str) -> bytes | None:
        with self._lock:
            store = self._store
            if store is None:
                return None
            key = self._key(name)
            return store.get(key) if store.check([key]) else None

    def _append(self, name: str, text: str) -> None:
        with self._lock:
            if self._store is not None:
                self._store.append(self._key(name), text)

    # ------------------------------------------------------------------ what the run calls

    def announce_failure(self, reason: str) -> None:
        """Tell the other nodes that this node failed (best effort, bounded)."""
        payload = reason[:MAX_MESSAGE_CHARS // 2]
        deadline = time.monotonic() + STORE_OP_TIMEOUT_S
        while time.monotonic() < deadline:
            try:
                if self._store is None and self.node_rank:
                    self._connect()
                self._append("failed", self._sign("failed", payload))
                return
            except (RuntimeError, OSError) as exc:  # the store is gone or not up yet
                self.problem = f"could not reach the job's store: {exc}"
                time.sleep(POLL_S)

    def wait_records(self, grace_s: float) -> dict[int, NodeRecord]:
        """Node 0: the records received, after waiting up to ``grace_s`` for the missing ones."""
        deadline = time.monotonic() + grace_s
        with self._changed:
            while len(self.records) < self.nnodes - 1 and self._thread is not None:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._changed.wait(min(left, POLL_S))
            return dict(self.records)

    def deliver(self, record: NodeRecord, deadline_s: float = SEND_DEADLINE_S) -> str | None:
        """Another node: hand node 0 this node's record; None once node 0 acknowledged it,
        else why not."""
        self._outgoing = self._sign("record", record.model_dump_json())
        if self._thread is None:
            self.start()
        if self._acknowledged.wait(deadline_s):
            return None
        return (self.problem or "node 0 did not acknowledge it") + f" within {deadline_s:g} s"

    # ------------------------------------------------------------------ the watcher

    def _watch(self) -> None:
        sent_at = 0.0
        while not self._closed.is_set():
            try:
                if self._store is None:
                    self._connect()
                self._look_for_failures()
                if self.node_rank == 0:
                    self._take_records()
                    self._look_for_seen()
                elif self._outgoing is not None and not self._acknowledged.is_set():
                    if time.monotonic() - sent_at > RESEND_S:
                        self._append(f"record/{self.node_rank}", self._outgoing)
                        sent_at = time.monotonic()
                    self._look_for_acknowledgement()
            except (RuntimeError, OSError) as exc:  # not up yet, gone, or an operation timed out
                self.problem = f"could not reach node 0's store at {self.host}:{self.port}: {exc}"
                with self._lock:
                    if self.node_rank:
                        self._store = None  # connect again
            self._closed.wait(POLL_S)

    def _look_for_failures(self) -> None:
        if len(self.failures) == self.nnodes - 1:
            return
        for rank, reason in self._verified("failed", self._read("failed") or b""):
            if rank != self.node_rank and rank not in self.failures:
                self.failures[rank] = reason
                if self.peer_failure is None:
                    self.peer_failure = f"node {rank} failed: {reason}"

    def _take_records(self) -> None:
        for rank in range(1, self.nnodes):
            if rank in self.records:
                continue
            for sender, payload in self._verified("record", self._read(f"record/{rank}") or b""):
                try:
                    record = NodeRecord.model_validate_json(payload)
                except ValidationError:
                    continue
                if sender == rank == record.node_rank and record.job_id == self.job_id:
                    with self._changed:
                        self.records[rank] = record  # the first valid one; later ones change nothing
                        self._changed.notify_all()
                    self._append(f"ack/{rank}", self._sign("ack", str(rank)))
                    self._acked.add(rank)
                    break

    def _look_for_acknowledgement(self) -> None:
        data = self._read(f"ack/{self.node_rank}") or b""
        if any(rank == 0 and payload == str(self.node_rank)
               for rank, payload in self._verified("ack", data)):
            self._append(f"seen/{self.node_rank}", self._sign("seen", "ack"))
            self._acknowledged.set()

    def _look_for_seen(self) -> None:
        for rank in self._acked - self._seen:
            if any(sender == rank for sender, _ in self._verified("seen", self._read(f"seen/{rank}") or b"")):
                self._seen.add(rank)
