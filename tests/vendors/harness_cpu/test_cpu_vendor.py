"""The cpu vendor: discovery, and how it shapes the launch."""

from __future__ import annotations

import pytest

from harness.errors import UserInputError
from harness.models import LaunchSpec
from harness.app import Harness
from harness.runner.pipeline import RunRequest, plan
from harness.launch import usable_cores


def test_discovers_the_host_cpu():
    harness = Harness.load(load_entrypoints=False, blocked=set())
    router = harness.router()
    devices = router.discover_devices("cpu")
    assert devices.kind == "cpu" and devices.count == 1
    assert f"({usable_cores()} cores)" in devices.devices[0].name
    with pytest.raises(UserInputError, match="unknown vendor 'not-cpu'"):
        router.discover_devices("not-cpu")


def test_run_wrapper_hides_gpus_and_splits_threads(tmp_path):
    harness = Harness.load(load_entrypoints=False, blocked=set())
    router = harness.router()
    context = plan(harness,
                   RunRequest(case="gpt3_125M", scale="smoke", nproc=2, output=tmp_path, cache_dir=tmp_path))
    launch = router.run(context, router.prepare_env(context), _dataset(tmp_path))
    assert isinstance(launch, LaunchSpec)
    assert launch.env["CUDA_VISIBLE_DEVICES"] == ""
    assert launch.env["OMP_NUM_THREADS"] == str(max(1, usable_cores() // 2))
    assert "torch.distributed.run" in launch.argv and "--nproc-per-node=2" in launch.argv


def _dataset(tmp_path):
    from harness.models import DatasetInfo

    return DatasetInfo(kind="gpt-npy", path=str(tmp_path), files=["x_ids.npy", "x_idx.npz"], synthesized=True)


def test_more_processes_than_cores_are_refused_before_launch(tmp_path, capsys):
    from harness.cli.main import main

    nproc = max(64, usable_cores() + 1)
    code = main(["run", "--case", "gpt3_125M", "--scale", "smoke", "--nproc", str(nproc),
                 "--output", str(tmp_path / "results")])
    err = capsys.readouterr().err
    assert code == 2 and f"--nproc {nproc} needs {nproc} CPU cores per node" in err, err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "results").exists()
