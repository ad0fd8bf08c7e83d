"""The matmul probe script (shared_scripts/matmul_probe.py): how it times a window on the CPU,
and the helper the built-in frameworks' ``matmul_probe`` hooks call."""

from __future__ import annotations

import sys
import threading
import time

import pytest

from harness.models import ExecutionEnv
from harness_cases.shared_scripts import run_matmul_probe
from harness_cases.shared_scripts.matmul_probe import busiest_thread_seconds, thread_cpu_seconds
from tests.harness.tampering_vendors import HOST_CPU

pytestmark = pytest.mark.skipif(thread_cpu_seconds() is None, reason="no per-thread times in /proc")


def _work():
    sum(i * i for i in range(2_000_000))


def test_a_window_on_the_cpu_is_the_busiest_threads_cpu_time():
    """Work in another thread counts as that thread's; a thread that only waited adds nothing,
    and no thread ran longer than the window lasted."""
    before, start = thread_cpu_seconds(), time.perf_counter()
    worker = threading.Thread(target=_work)
    worker.start()
    worker.join()  # this thread sleeps meanwhile
    after, wall = thread_cpu_seconds(), time.perf_counter() - start
    busiest = busiest_thread_seconds(before, after)
    assert busiest is not None and 0 < busiest <= wall + 0.02  # 0.02: a clock tick where /proc/stat counts
    assert busiest_thread_seconds(before, before) is None  # nothing ran: no window
    assert busiest_thread_seconds(None, after) is None


def test_the_helper_runs_the_probe_with_the_processs_variables(monkeypatch):
    """``env.env`` reaches the probe's process: one thread for a device of one core."""
    env = ExecutionEnv(python=sys.executable, framework="pytorch", env={"OMP_NUM_THREADS": "1"})
    seen = {}

    def run(argv, **kwargs):
        seen.update(argv=argv, env=kwargs["env"])
        raise OSError("not run")

    monkeypatch.setattr("subprocess.run", run)
    assert run_matmul_probe(env, "torch", HOST_CPU, "fp32") is None  # a failed probe: no rate
    assert seen["env"]["OMP_NUM_THREADS"] == "1"
    assert seen["argv"][1:5] == ["-I", seen["argv"][2], "--framework", "torch"]
    assert run_matmul_probe(env, "paddle", HOST_CPU, "fp32") is None  # the backend has no paddle device


@pytest.mark.slow
@pytest.mark.parametrize("framework, case, dtype, version", [
    ("paddle", "gpt3_125M", "paddle.float32", "3.3.1"),
    ("mxnet", "mobilenet_v1", "mxnet.float32", "1.9.1"),
])
def test_the_paddle_and_mxnet_probes_measure_the_cpu(framework_cache, tmp_path, framework, case, dtype, version):
    """Their plugins' ``matmul_probe``: real matmuls on the host CPU through the framework, in
    its isolated environment, a second or two."""
    from harness.app import Harness
    from harness.runner.pipeline import RunRequest, plan

    harness = Harness.load(load_entrypoints=False)
    context = plan(harness, RunRequest(case=case, vendor="cpu", framework=framework, scale="smoke",
                                       output=tmp_path, cache_dir=framework_cache))
    router = harness.router(context)
    env = router.prepare_env(context)
    assert env.isolated  # the probe runs where the training runs, not in harness's interpreter
    rate = router.matmul_probe(context, env)
    assert rate is not None and rate.flops_per_s > 1e8
    assert rate.device.startswith("cpu") and rate.dtype == dtype and rate.framework_version == version
    assert rate.clock == "thread_cpu"
    assert set(router.hooks_by_plugin()) >= {f"harness_{framework}.plugin"}
