"""End to end: `harness run --framework paddle` builds the Paddle environment and trains for real."""

from __future__ import annotations

import re

import pytest

from tests.plugins.conftest import legacy_index, smoke_result

pytestmark = pytest.mark.slow


def _check(result: dict, index: dict, unit: str) -> None:
    assert result["status"] == "success" and result["framework"] == "paddle"
    assert result["framework_version"] == "3.3.1"
    assert result["environment"]["isolated_env"] is True
    assert result["environment"]["packages"]["paddlepaddle"] == "3.3.1"
    assert result["loss_final"] < result["loss_first"]  # real training
    assert result["peak_memory_bytes"] > 0  # the script's process max RSS line
    assert result["throughput"]["unit"] == unit and result["throughput"]["value"] > 0
    assert index["UNIT"] == unit and index["JOB_FAIL_FLAG"] == 0
    assert index["FINAL_RESULT"] == pytest.approx(result["throughput"]["value"], rel=1e-3)


def test_gpt_smoke_and_environment_reuse(harness_cli, tmp_path):
    result = smoke_result(harness_cli, "--case", "gpt3_6.7B", "--framework", "paddle")
    _check(result, legacy_index(tmp_path, result), "tokens/s")
    # The loss falls by more than a nat in 30 steps, as in the PyTorch smoke test.
    assert result["steps_completed"] == 30 and result["loss_final"] < result["loss_first"] - 1.0
    # The second run of the case reuses the environment and says so, quickly.
    proc = harness_cli("run", "--vendor", "cpu", "--scale", "smoke", "--case", "gpt3_6.7B",
                       "--framework", "paddle", "--max-steps", "6", "--json")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "reusing environment" in proc.stderr
    seconds = float(re.search(r"prepare_env took ([\d.]+) s", proc.stderr).group(1))
    assert seconds < 5


def test_gpt_data_parallel_two_processes(harness_cli, tmp_path):
    result = smoke_result(harness_cli, "--case", "gpt3_6.7B", "--framework", "paddle", "--nproc", "2")
    index = legacy_index(tmp_path, result)
    _check(result, index, "tokens/s")
    assert result["run_mode"] == "mp" and index["gpu_num"] == 2
    assert result["global_batch_size"] == 2 * result["config"]["settings"]["micro_batch_size"]


def test_bert_smoke(harness_cli, tmp_path):
    result = smoke_result(harness_cli, "--case", "bert_base_seq128", "--framework", "paddle")
    index = legacy_index(tmp_path, result)
    _check(result, index, "sequences/s")
    assert index["model_name"] == "nlp_bert_base_seq128_bs8_fp32"


def test_resnet50_smoke(harness_cli, tmp_path):
    result = smoke_result(harness_cli, "--case", "resnet50", "--framework", "paddle")
    index = legacy_index(tmp_path, result)
    _check(result, index, "images/s")
    assert index["model_name"].startswith("clas_resnet50_bs") and index["direction_id"] == 0
    assert result["health"]["status"] == "healthy", result["health"]["reasons"]


def test_bf16_grad_accumulation_and_recompute(harness_cli, tmp_path):
    result = smoke_result(harness_cli, "--case", "gpt3_125M", "--framework", "paddle", "--precision",
                          "bf16", "--max-steps", "8", "--set", "grad_accum_steps=2",
                          "--set", "recompute=full")
    assert result["status"] == "success" and result["global_batch_size"] == 16
    assert result["loss_final"] < result["loss_first"]
    log = (tmp_path / "results" / result["run_id"] / "train.log").read_text()
    assert "precision bf16 (amp O1)" in log and "grad accum 2" in log and "recompute full" in log


def test_fp16_on_cpu_is_refused(harness_cli):
    proc = harness_cli("run", "--vendor", "cpu", "--scale", "smoke", "--case", "bert_base_seq128",
                       "--framework", "paddle", "--precision", "fp16", "--max-steps", "6")
    # The cpu vendor's device backend declares no fp16: refused before launch, one line.
    assert proc.returncode == 2 and "vendor 'cpu' has no fp16" in proc.stderr


def test_gpt_two_nodes_on_localhost_are_one_job(framework_cache, tmp_path):
    """paddle.distributed.launch across two nodes on one host (--master, --nnodes, --rank):
    one job result on node 0 that lists both nodes, every node exits 0."""
    import json
    import os
    import subprocess
    import sys
    import uuid

    job = f"pd-{uuid.uuid4().hex[:8]}"
    env = {k: v for k, v in os.environ.items() if k not in ("MASTER_PORT", "HARNESS_BLOCK_PLUGINS")}
    env.update(MASTER_ADDR="127.0.0.1", HARNESS_CACHE_DIR=str(framework_cache), PYTHONUNBUFFERED="1",
               HARNESS_JOB_SECRET=uuid.uuid4().hex)
    nodes = [subprocess.Popen(
        [sys.executable, "-m", "harness", "run", "--vendor", "cpu", "--scale", "smoke", "--case",
         "gpt3_125M", "--framework", "paddle", "--nproc", "1", "--nnodes", "2", "--max-steps", "6",
         "--job-id", job, "--node-rank", str(rank), "--output", str(tmp_path / f"node{rank}")],
        env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for rank in (0, 1)]
    outputs = [node.communicate(timeout=900)[0] for node in nodes]
    assert [node.returncode for node in nodes] == [0, 0], [o[-3000:] for o in outputs]
    run_dir = tmp_path / "node0" / f"{job}-gpt3_125M-paddle-cpu"
    result = json.loads((run_dir / "result.json").read_text())
    assert result["status"] == "success" and result["nnodes"] == 2 and result["steps_completed"] == 6
    assert result["global_batch_size"] == 2 * result["config"]["settings"]["micro_batch_size"]  # one rank per node
    assert result["loss_final"] < result["loss_first"]
    assert [(n["node_rank"], n["status"]) for n in result["nodes"]] == [(0, "success"), (1, "success")]
    launch_log = (run_dir / "train.log").read_text()
    assert "nnodes: 2" in launch_log and f"Job: {job}, mode collective, replicas 2[2:2]" in launch_log
