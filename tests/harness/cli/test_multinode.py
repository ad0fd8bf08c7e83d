"""A 2-node job on localhost through torchrun's c10d rendezvous, started the documented way:
the same command on each node, with MASTER_ADDR/MASTER_PORT, a job id and the node rank."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _node(tmp_path, rank: int, port: int, job: str, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               HARNESS_CACHE_DIR=str(tmp_path / "cache"), PYTHONUNBUFFERED="1")
    argv = [sys.executable, "-m", "harness", "run", "--case", "gpt3_125M", "--scale", "smoke",
            "--nproc", "1", "--nnodes", "2", "--max-steps", "6", "--job-id", job,
            "--node-rank", str(rank), "--output", str(tmp_path / f"node{rank}"), *extra]
    return subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


@pytest.mark.slow
def test_two_nodes_are_one_job_and_a_missing_node_fails_in_bounded_time(tmp_path):
    port = _free_port()
    nodes = [_node(tmp_path, rank, port, "job-a") for rank in (0, 1)]
    outputs = [node.communicate(timeout=600)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], outputs
    run_dir = tmp_path / "node0" / "job-a-gpt3_125M-pytorch-cpu"
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "success" and result["nnodes"] == 2 and result["steps_completed"] == 6
    record = json.loads((tmp_path / "node1" / "job-a-gpt3_125M-pytorch-cpu.node1" / "node.json").read_text())
    assert record["status"] == "success" and record["job_run_id"] == result["run_id"]
    assert record["node_rank"] == 1 and socket.gethostname() not in json.dumps(record)
    assert not (tmp_path / "node1" / "job-a-gpt3_125M-pytorch-cpu.node1" / "result.json").exists()

    # Node 1 never comes: node 0 fails within the rendezvous timeout plus a bounded grace.
    start = time.monotonic()
    alone = _node(tmp_path, 0, _free_port(), "job-b", "--set", "rendezvous_timeout_s=20")
    output = alone.communicate(timeout=300)[0]
    assert alone.returncode == 1, output
    assert time.monotonic() - start < 20 + 120
    failed = json.loads((tmp_path / "node0" / "job-b-gpt3_125M-pytorch-cpu" / "result.json").read_text())
    assert failed["status"] == "failed" and failed["failure_reason"]
