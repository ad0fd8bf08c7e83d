"""Shared launch facts: job ports derived from the job id, torchrun's failure summary, the
identity of a node under --launcher slurm (real Slurm runs in tests/harness/cli/test_slurm.py)."""

from __future__ import annotations

import pytest

from harness.errors import UserInputError
from harness.launch import (DERIVED_PORT_BASE, DERIVED_PORT_PAIRS, derived_port, job_identity,
                            rendezvous_endpoint, slurm_identity, torchrun_failed_ranks)


def test_derived_ports_are_stable_even_and_below_the_ephemeral_range():
    ports = {derived_port(f"job-{i}") for i in range(2000)}
    assert derived_port("job-1") == derived_port("job-1")
    assert all(p % 2 == 0 and DERIVED_PORT_BASE <= p < DERIVED_PORT_BASE + 2 * DERIVED_PORT_PAIRS
               for p in ports)
    assert max(ports) + 1 < 32768 and len(ports) > 1500  # spread out


def test_master_port_wins_over_the_derived_one_and_is_checked(monkeypatch):
    monkeypatch.setenv("MASTER_ADDR", "n0")
    monkeypatch.delenv("MASTER_PORT", raising=False)
    assert rendezvous_endpoint("j") == f"n0:{derived_port('j')}"
    monkeypatch.setenv("MASTER_PORT", "29500")
    assert rendezvous_endpoint("j") == "n0:29500"
    monkeypatch.setenv("MASTER_PORT", "http")
    with pytest.raises(UserInputError, match="MASTER_PORT='http' is not a port"):
        rendezvous_endpoint("j")


def test_job_identity_from_options_and_environment(monkeypatch):
    for name in ("HARNESS_JOB_ID", "SLURM_JOB_ID", "NODE_RANK", "SLURM_NODEID"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MASTER_ADDR", "n0")
    assert job_identity("a", 1, 2).node_rank == 1
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_NODEID", "1")
    identity = job_identity(None, None, 2)
    assert (identity.job_id, identity.node_rank) == ("77", 1)
    with pytest.raises(UserInputError, match="out of range"):
        job_identity("a", 2, 2)
    with pytest.raises(UserInputError, match="letters, digits"):
        job_identity("a b", 0, 2)


TORCHRUN_SUMMARY = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train_gpt.py FAILED
------------------------------------------------------------
Failures:
[1]:
  time      : 2026-11-23_16:55:09
  host      : <host>
  rank      : 3 (local_rank: 1)
  exitcode  : 1 (pid: 5061)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-11-23_16:55:09
  host      : <host>
  rank      : 2 (local_rank: 0)
  exitcode  : -9 (pid: 5060)  (SIGKILL)
  error_file: <N/A>
  traceback : Signal 9 (SIGKILL) received by PID 5060
============================================================
"""


def test_torchrun_failed_ranks_are_read_from_its_summary():
    assert torchrun_failed_ranks(TORCHRUN_SUMMARY.splitlines()) == [
        "rank 2 (local rank 0): killed by SIGKILL (out of memory?)",  # the root cause first
        "rank 3 (local rank 1): exited with code 1",
    ]
    assert torchrun_failed_ranks(["iteration 1/ 6 | loss 7.1", "rank: nothing"]) == []


def _slurm_env(monkeypatch, **values):
    for name in ("SLURM_JOB_ID", "SLURM_STEP_ID", "SLURM_NODEID", "SLURM_STEP_NUM_NODES",
                 "SLURM_NNODES", "SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
                 "SLURM_STEP_TASKS_PER_NODE", "HARNESS_JOB_ID"):
        monkeypatch.delenv(name, raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name, value)


def test_slurm_identity_needs_an_allocation_and_one_task_per_node(monkeypatch):
    _slurm_env(monkeypatch)
    with pytest.raises(UserInputError, match="inside a Slurm allocation"):
        slurm_identity(None, None)
    _slurm_env(monkeypatch, SLURM_JOB_ID="12")
    with pytest.raises(UserInputError, match="one srun task per node"):
        slurm_identity(None, None)
    _slurm_env(monkeypatch, SLURM_JOB_ID="12", SLURM_STEP_ID="0", SLURM_NODEID="0",
               SLURM_STEP_NUM_NODES="1", SLURM_STEP_TASKS_PER_NODE="2")
    with pytest.raises(UserInputError, match="needs one srun task per node, got 2"):
        slurm_identity(None, None)
    _slurm_env(monkeypatch, SLURM_JOB_ID="12", SLURM_STEP_ID="0", SLURM_NODEID="0",
               SLURM_STEP_NUM_NODES="1", SLURM_STEP_TASKS_PER_NODE="1")
    identity = slurm_identity(None, None)
    assert (identity.job_id, identity.node_rank, identity.nnodes) == ("12", 0, 1)
    with pytest.raises(UserInputError, match="contradicts SLURM_NODEID"):
        slurm_identity(None, 1)
