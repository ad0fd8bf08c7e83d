"""The MXNet plugin's ``matmul_probe``: real MXNet matmuls on the host CPU, in its isolated
environment, a second or two."""

from __future__ import annotations

import pytest

from harness.app import Harness
from harness.runner.pipeline import RunRequest, plan

pytestmark = pytest.mark.slow


def test_the_mxnet_probe_measures_the_cpu(framework_cache, tmp_path):
    harness = Harness.load(load_entrypoints=False)
    context = plan(harness, RunRequest(case="mobilenet_v1", vendor="cpu", framework="mxnet", scale="smoke",
                                       output=tmp_path, cache_dir=framework_cache))
    router = harness.router(context)
    env = router.prepare_env(context)
    assert env.isolated  # the probe runs where the training runs, not in harness's interpreter
    rate = router.matmul_probe(context, env)
    assert rate is not None and rate.flops_per_s > 1e8
    assert rate.device.startswith("cpu") and rate.dtype == "mxnet.float32" and rate.framework_version == "1.9.1"
    assert rate.clock == "thread_cpu"
    assert set(router.hooks_by_plugin()) >= {"harness_mxnet.plugin"}
