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


def _secret(job: str) -> str:
    """The job's secret, the same on both nodes of a job and different for each job."""
    return hashlib.sha256(f"secret of {job}".encode()).hexdigest()


def _node(tmp_path, rank: int, job: str, *extra: str, max_steps: int = 6) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k not in ("MASTER_PORT", "SLURM_JOB_ID")}
    env.update(MASTER_ADDR="127.0.0.1", HARNESS_CACHE_DIR=str(tmp_path / "cache"),
               PYTHONUNBUFFERED="1", HARNESS_JOB_SECRET=_secret(job))
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
        assert result["nnodes"] == 2 and result["steps_completed"] == 6 and result["job_id"] == job
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


def _training_under_way(tmp_path, job: str, nodes) -> None:
    log0 = tmp_path / "node0" / f"{job}-{CASE_RUN}" / "train.log"
    deadline = time.monotonic() + 300
    while not (log0.exists() and " iteration " in log0.read_text()):
        assert time.monotonic() < deadline and all(n.poll() is None for n in nodes)
        time.sleep(0.5)


def _ends(nodes) -> tuple[list[str], list[float]]:
    """Each node's output and the time.monotonic() at which it ended."""
    ended: dict[int, float] = {}
    while len(ended) < len(nodes):
        for index, node in enumerate(nodes):
            if index not in ended and node.poll() is not None:
                ended[index] = time.monotonic()
        time.sleep(0.1)
    return [node.communicate()[0] for node in nodes], [ended[i] for i in range(len(nodes))]


#: How long after node 1 ended node 0 may take here: the link's bound (a poll and the stop
#: grace, harness.runner.job_link) and its own result, with room for a loaded machine. Far
#: below the rendezvous and collective timeouts (300 s) that would end node 0 otherwise.
NODE_0_AFTER_NODE_1_S = 45


@pytest.mark.slow
def test_a_rank_killed_on_node_1_ends_node_0_in_bounded_time_naming_node_1(tmp_path):
    [job] = _job_ids(1)
    nodes = [_node(tmp_path, rank, job, max_steps=400) for rank in (0, 1)]
    _training_under_way(tmp_path, job, nodes)
    workers = [p for p in psutil.Process(nodes[1].pid).children(recursive=True)
               if any("train_gpt.py" in part for part in p.cmdline())
               and "torch.distributed.run" not in " ".join(p.cmdline())]
    assert len(workers) == 1, workers
    workers[0].kill()  # SIGKILL, as the OOM killer sends it
    outputs, ended = _ends(nodes)
    assert [node.returncode for node in nodes] == [1, 1], outputs
    assert ended[0] - ended[1] < NODE_0_AFTER_NODE_1_S, outputs
    result = _result(tmp_path, job)
    assert result["status"] == "failed" and result["steps_completed"] < 400
    assert result["failure_reason"].startswith(
        "node 1 (terminated): rank 1 (local rank 0): killed by SIGKILL (out of memory?); node 0: ")
    assert result["nodes"][1]["failed_ranks"] == ["rank 1 (local rank 0): killed by SIGKILL (out of memory?)"]
    assert _leftovers(tmp_path) == []


@pytest.mark.slow
def test_a_node_that_fails_before_its_ranks_start_stops_the_others_in_bounded_time(tmp_path):
    # Node 0's ranks wait at the rendezvous (300 s) for node 1's, which never start: node 1's
    # dataset cannot be written (its folder is a file). Only node 1's announcement can end
    # node 0 sooner.
    [job] = _job_ids(1)
    data = tmp_path / "node1-data"
    data.mkdir()
    (data / "gpt-npy").write_text("a file where the dataset's folder goes")
    node0 = _node(tmp_path, 0, job, "--set", "rendezvous_timeout_s=300", max_steps=400)
    _wait_for_store(job)
    node1 = _node(tmp_path, 1, job, "--set", "rendezvous_timeout_s=300", "--data-dir", str(data),
                  max_steps=400)
    outputs, ended = _ends([node0, node1])
    assert node1.returncode != 0 and node0.returncode == 1, outputs
    assert ended[0] - ended[1] < NODE_0_AFTER_NODE_1_S, outputs
    result = _result(tmp_path, job)
    assert result["status"] == "failed"
    assert result["failure_reason"].startswith("node 1 (failed): data preparation failed"), result
    assert "node 0: stopped: node 1 failed: data preparation failed" in result["failure_reason"]
    assert result["nodes"][1]["status"] == "failed"
    assert _leftovers(tmp_path) == []


def _wait_for_store(job: str) -> int:
    """The port of the job's store (one above the rendezvous port) once node 0 listens."""
    port = derived_port(job) + 1
    deadline = time.monotonic() + 300
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
            return port
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.2)


@pytest.mark.slow
def test_a_forged_record_and_a_slow_connection_during_a_job_change_nothing(tmp_path):
    import threading
    from datetime import timedelta

    from torch.distributed import TCPStore

    [job] = _job_ids(1)
    node0 = _node(tmp_path, 0, job, max_steps=8)
    port = _wait_for_store(job)
    stop = threading.Event()

    def slow_client() -> None:  # one byte every 4 s, for the whole job
        with socket.create_connection(("127.0.0.1", port)) as slow:
            while not stop.wait(4):
                try:
                    slow.sendall(b"\x00")
                except OSError:
                    return

    threading.Thread(target=slow_client, daemon=True).start()
    intruder = TCPStore("127.0.0.1", port, is_master=False, timeout=timedelta(seconds=10))
    forged = {"job_id": job, "job_run_id": f"{job}-{CASE_RUN}", "node_rank": 1, "nnodes": 2,
              "host": "forged-host", "status": "failed", "reason": "forged reason"}
    for mac in ("", "0" * 64):
        line = json.dumps({"rank": 1, "payload": json.dumps(forged), "mac": mac}) + "\n"
        intruder.append(f"harness/{job}/record/1", line)
        intruder.append(f"harness/{job}/failed", json.dumps(
            {"rank": 1, "payload": "forged failure", "mac": mac}) + "\n")
    node1 = _node(tmp_path, 1, job, max_steps=8)
    outputs = [node.communicate(timeout=600)[0] for node in (node0, node1)]
    stop.set()
    assert [node0.returncode, node1.returncode] == [0, 0], outputs
    result = _result(tmp_path, job)
    assert result["status"] == "success" and result["failure_reason"] is None
    assert result["nodes"][1]["status"] == "success" and result["nodes"][1]["host"] == "<host>"
    text = json.dumps(result)
    assert all(word not in text for word in ("forged reason", "forged-host", "forged failure"))
    assert _leftovers(tmp_path) == []


def test_a_job_id_used_before_asks_for_a_new_one(tmp_path):
    job = "job-again"
    (tmp_path / "results" / f"{job}-{CASE_RUN}").mkdir(parents=True)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", HARNESS_CACHE_DIR=str(tmp_path / "cache"),
               HARNESS_JOB_SECRET=_secret(job))
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--case", "gpt3_125M", "--scale",
                           "smoke", "--nnodes", "2", "--job-id", job, "--node-rank", "0",
                           "--output", "results"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "needs a new --job-id" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_a_multi_node_run_without_the_job_secret_is_refused_before_anything_runs(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "HARNESS_JOB_SECRET"}
    env.update(MASTER_ADDR="127.0.0.1", HARNESS_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "harness", "run", "--case", "gpt3_125M", "--scale",
                           "smoke", "--nnodes", "2", "--job-id", "job-nosecret", "--node-rank", "0",
                           "--output", "results"], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 2 and "needs the job's secret in HARNESS_JOB_SECRET" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "results").exists()
