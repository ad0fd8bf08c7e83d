"""End to end on a machine without network: Paddle's and MXNet's environments built offline
from a wheelhouse (by `harness env build`), then a smoke run in them."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import shut_network

pytestmark = pytest.mark.slow

#: framework -> (the cpu vendor's requirements of its environment, a case it trains)
FRAMEWORKS = {
    "paddle": (("paddlepaddle==3.3.1", "h5py>=3", "setuptools"), "mobilenet_v1"),
    "mxnet": (("mxnet==1.9.1", "numpy<1.24"), "mobilenet_v1"),
}


@pytest.fixture(scope="module")
def framework_wheelhouse(tmp_path_factory):
    """One folder with the wheels of both environments and all their dependencies."""
    folder = tmp_path_factory.mktemp("framework_wheelhouse")
    for requirements, _ in FRAMEWORKS.values():
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--quiet",
                               "--only-binary=:all:", "--dest", str(folder), *requirements],
                              capture_output=True, text=True, timeout=1800)
        if proc.returncode != 0:
            pytest.skip("the package registry is unreachable, so no framework wheelhouse could "
                        f"be made: {proc.stderr.strip().splitlines()[-1:]}")
    return folder


@pytest.mark.parametrize("framework", sorted(FRAMEWORKS))
def test_the_framework_environment_builds_offline_and_trains(framework, framework_wheelhouse, tmp_path):
    requirements, case = FRAMEWORKS[framework]
    env = shut_network(dict(os.environ, HARNESS_CACHE_DIR=str(tmp_path / "cache"),
                            PYTHONUNBUFFERED="1"))
    env.pop("HARNESS_BLOCK_PLUGINS", None)

    def harness(*args):
        return subprocess.run([sys.executable, "-m", "harness", *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=1800)

    build = harness("env", "build", "--vendor", "cpu", "--case", case, "--framework", framework,
                    "--wheelhouse", str(framework_wheelhouse))
    assert build.returncode == 0, build.stderr[-3000:]
    assert f"requirements: {' '.join(requirements)}" in build.stdout
    run = harness("run", "--vendor", "cpu", "--scale", "smoke", "--case", case, "--framework",
                  framework, "--max-steps", "7", "--json")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "reusing environment" in run.stderr
    result = json.loads(run.stdout)
    assert result["status"] == "success"
    assert result["framework_version"] == requirements[0].split("==")[1]
    assert result["environment"]["requirements"] == list(requirements)
    assert result["environment"]["wheelhouse"] == str(framework_wheelhouse)
