"""`harness equivalence` with the real frameworks at smoke size on the CPU.

The fast tests use the isolated framework environments already built in the harness cache
(``HARNESS_CACHE_DIR``, else ``~/.cache/harness``) and skip, saying which and how to build
it, when one is missing; building one takes minutes, which belongs to the slow tests.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from harness.cache import default_cache_dir
from harness.envs.store import EnvStore, default_envs_root

#: The isolated environment each framework trains in on the cpu vendor (None: this interpreter).
CPU_ENVS = {"pytorch": None, "paddle": "paddle-cpu", "mxnet": "mxnet-cpu"}


def _env_built(name: str) -> bool:
    store = EnvStore(default_envs_root(default_cache_dir()))
    return any(env.complete and env.record.name == name for env in store.list())


def require_envs(*frameworks: str) -> None:
    for framework in frameworks:
        env = CPU_ENVS[framework]
        if env is not None and not _env_built(env):
            pytest.skip(f"no built {env} environment in {default_envs_root(default_cache_dir())} "
                        f"(`harness run --vendor cpu --framework {framework} --case <case> "
                        f"--scale smoke` builds it)")


def equivalence(tmp_path, *args: str) -> tuple[subprocess.CompletedProcess, dict | None]:
    env = dict(os.environ, HARNESS_CACHE_DIR=str(default_cache_dir()), PYTHONUNBUFFERED="1")
    env.pop("HARNESS_BLOCK_PLUGINS", None)
    proc = subprocess.run([sys.executable, "-m", "harness", "equivalence", "--json",
                           "--output", str(tmp_path / "results"), *args],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=1200)
    return proc, (json.loads(proc.stdout) if proc.stdout.strip().startswith("{") else None)


def test_gpt_pytorch_and_paddle_train_the_same_computation(tmp_path):
    require_envs("pytorch", "paddle")
    proc, result = equivalence(tmp_path, "--case", "gpt3_125M", "--frameworks", "pytorch,paddle",
                               "--steps", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    [pair] = result["pairs"]
    assert pair["problems"] == [] and pair["first_divergence"] is None
    assert pair["parameter_count"][0] == pair["parameter_count"][1] > 0
    assert len(pair["steps"]) == 3 and pair["grad_norm"]["reference"] > 0
    assert [layer["name"] for layer in pair["layers"]] == ["embeddings", "blocks.0", "blocks.1",
                                                           "ln_f", "loss"]
    # Real numbers from two frameworks: equal to rounding, and not bit-identical throughout.
    assert 0 < max(layer["relative"] for layer in pair["layers"]) < 1e-5
    stored = tmp_path / "results" / "equivalence" / "gpt3_125M"
    [check] = stored.iterdir()
    assert {p.name for p in check.iterdir()} >= {"initial_state.npz", "equivalence.json",
                                                 "pytorch", "paddle", "runs"}


@pytest.mark.slow
def test_bert_pytorch_and_paddle_train_the_same_computation(tmp_path):
    require_envs("pytorch", "paddle")
    proc, result = equivalence(tmp_path, "--case", "bert_base_seq128", "--frameworks",
                               "pytorch,paddle", "--steps", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    [pair] = result["pairs"]
    assert pair["problems"] == [] and pair["init_differences"] == []
    assert [layer["name"] for layer in pair["layers"]][:2] == ["bert.embeddings", "bert.encoder.layer.0"]
    # The key bias's gradient cancels exactly (softmax ignores a per-query constant): it is
    # rounding noise in both frameworks, reported and not judged.
    assert pair["worst_gradient"][0].endswith("attention.self.key.bias")


def _assert_equivalent_cnn(result: dict, steps: int) -> None:
    """Three frameworks, the same layers (positional names), initialisation, first-batch
    activations layer by layer, losses, step-1 gradients and final weights, in float64 (the
    CNN cases' equivalence_precision) within the case's measured tolerances."""
    assert [run["status"] for run in result["runs"]] == ["success"] * 3
    assert result["precision"] == "fp64"
    assert [p["candidate"] for p in result["pairs"]] == ["paddle", "mxnet"]
    for pair in result["pairs"]:
        assert pair["problems"] == [] and pair["first_divergence"] is None, pair["problems"]
        assert pair["shape_differences"] == [] and pair["init_differences"] == []
        assert pair["parameter_count"][0] == pair["parameter_count"][1] > 0
        assert len(pair["steps"]) == steps
        # Real numbers from two frameworks in float64: step 1 equal to about 1e-14, far
        # below float32 rounding, and the loss of every step far below any real difference
        # (MXNet's own momentum convention alone moved step 3 by 2e-2).
        assert pair["steps"][0]["relative"] < 1e-12
        assert max(s["relative"] for s in pair["steps"]) < 1e-6


@pytest.mark.parametrize("case", ["mobilenet_v1", pytest.param("resnet50", marks=pytest.mark.slow)])
def test_cnn_is_the_same_computation_in_pytorch_paddle_and_mxnet(tmp_path, case):
    require_envs("pytorch", "paddle", "mxnet")
    proc, result = equivalence(tmp_path, "--case", case, "--frameworks", "pytorch,paddle,mxnet",
                               "--steps", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    _assert_equivalent_cnn(result, 3)
