"""Multi-node jobs on localhost, started the documented way: the same command on each node with
MASTER_ADDR, a job id and the node rank (MASTER_PORT left to the harness: derived from the job
id). Two jobs at once, a node that never comes, a rank killed mid-training."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from harness.launch import derived_port

CASE_RUN = "gpt3_125M-pytorch-cpu"


def _job_ids(count: int) -> list[str]:
    """Job ids unique to this test run (another test run on the machine uses others), whose
    derived ports differ."""
    while True:
        ids = [f"job-{uuid.uuid4().hex[:8]}" for _ in range(count)]
        if len({derived_port(job) for job in ids}) == count:
            return ids


def _node(tmp_path, rank: int, job: str, *extra: str, max_steps: int = 4) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("MASTER_PORT", "SLURM_JOB_ID")}
    env.update(MASTER_ADDR="127.0.0.1", HARNESS_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONUNBUFFERED="1")
    argv = [sys.executable, "-m", "harness", "run", "--case", "gpt3_125M", "--scale", "smoke",
            "--nproc", "1", "--nnodes", "2", "--max-steps", str(max_steps), "--job-id", job,
            "--node-rank", str(rank), "--output", str(tmp_path / f"node{rank}"), *extra]
    return subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def _result(tmp_path, job: str) -> dict:
    return json.loads((tmp_path / "node0" / f"{job}-{CASE_RUN}" / "result.json").read_text())


def _leftovers(tmp_path) -> list[str]:
    """Processes still running for this test's jobs (their command lines name tmp_path)."""
    left = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            if any(str(tmp_path) in part for part in process.info["cmdline"] or []):
                left.append(" ".join(process.info["cmdline"]))
        except psutil.Error:
            pass
    return left


@pytest.mark.slow
def test_two_concurrent_jobs_on_one_host_are_each_one_job(tmp_path):
    jobs = _job_ids(2)
    nodes = {(job, rank): _node(tmp_path, rank, job) for job in jobs for rank in (0, 1)}
    outputs = {key: node.communicate(timeout=600)[0] for key, node in nodes.items()}
    assert {key: node.returncode for key, node in nodes.items()} == dict.fromkeys(nodes, 0), outputs
    for job in jobs:
        result = _result(tmp_path, job)
        assert result["status"] == "success" and result["failure_reason"] is None
        assert result["nnodes"] == 2 and result["steps_completed"] == 4 and result["job_id"] == job
        node_dir = tmp_path / "node1" / f"{job}-{CASE_RUN}.node1"
        record = json.loads((node_dir / "node.json").read_text())
        assert record["status"] == "success" and record["job_run_id"] == result["run_id"]
        assert not (node_dir / "result.json").exists()
        # Node 0's result lists both nodes, with node 1's record as node 1 sent it.
        assert [n["node_rank"] for n in result["nodes"]] == [0, 1]
        assert result["nodes"][1] == record
        assert all(n["status"] == "success" and n["host"] == "<host>" for n in result["nodes"])
        log0 = tmp_path / "node0" / result["run_id"] / "train.log"
        assert result["nodes"][0]["log_sha256"] == hashlib.sha256(log0.read_bytes()).hexdigest()
        assert record["log_sha256"] == hashlib.sha256((node_dir / "train.log").read_bytes()).hexdigest()
        assert socket.gethostname() not in json.dumps(result["nodes"])
    assert _leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_missing_node_fails_every_node_that_came_in_bounded_time(tmp_path):
    # Job 1 lacks node 1, job 2 lacks node 0; both run at once.
    job1, job2 = _job_ids(2)
    timeout = 10
    start = time.monotonic()
    alone0 = _node(tmp_path, 0, job1, "--set", f"rendezvous_timeout_s={timeout}")
    alone1 = _node(tmp_path, 1, job2, "--set", f"rendezvous_timeout_s={timeout}")
    outputs = [alone0.communicate(timeout=300)[0], alone1.communicate(timeout=300)[0]]
    # the rendezvous timeout, the 20 s grace for node records and start-up under load
    assert time.monotonic() - start < timeout + 20 + 120, outputs
    assert alone0.returncode == 1 and alone1.returncode == 1, outputs
    failed = _result(tmp_path, job1)
    assert failed["status"] == "failed" and failed["failure_reason"]
    assert failed["nodes"][1]["status"] == "missing" and failed["nodes"][1]["node_rank"] == 1
    record = json.loads((tmp_path / "node1" / f"{job2}-{CASE_RUN}.node1" / "node.json").read_text())
    assert record["status"] == "failed" and record["reason"]
    assert "node record not delivered to node 0" in outputs[1]
    assert _leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_rank_killed_on_node_1_fails_both_nodes_and_the_result_names_it(tmp_path):
    [job] = _job_ids(1)
    nodes = [_node(tmp_path, rank, job, "--set", "rendezvous_timeout_s=120", max_steps=400)
             for rank in (0, 1)]
    log0 = tmp_path / "node0" / f"{job}-{CASE_RUN}" / "train.log"
    deadline = time.monotonic() + 300
    while not (log0.exists() and " iteration " in log0.read_text()):  # training is under way
        assert time.monotonic() < deadline and all(n.poll() is None for n in nodes)
        time.sleep(0.5)
    workers = [p for p in psutil.Process(nodes[1].pid).children(recursive=True)
               if any("train_gpt.py" in part for part in p.cmdline())
               and "torch.distributed.run" not in " ".join(p.cmdline())]
    assert len(workers) == 1, workers
    workers[0].kill()
    killed_at = time.monotonic()
    outputs = [node.communicate(timeout=600)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [1, 1], outputs
    assert time.monotonic() - killed_at < 20 + 120  # the grace for node records, and load
    result = _result(tmp_path, job)
    assert result["status"] == "failed" and result["steps_completed"] < 400
    assert result["failure_reason"].startswith(
        "node 1 (terminated): rank 1 (local rank 0): killed by SIGKILL (out of memory?)")
    assert result["nodes"][1]["failed_ranks"] == ["rank 1 (local rank 0): killed by SIGKILL (out of memory?)"]
    assert _leftovers(tmp_path) == []


def test_a_job_id_used_before_asks_for_a_new_one(tmp_path):
    job = "job-again"
    (tmp_path / "results" / f"{job}-{CASE_RUN}").mkdir(parents=True)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", HARNESS_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--case", "gpt3_125M", "--scale",
                           "smoke", "--nnodes", "2", "--job-id", job, "--node-rank", "0",
                           "--output", "results"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "needs a new --job-id" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
