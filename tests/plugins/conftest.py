"""Fixtures for end-to-end framework runs: one harness cache (environments, datasets) per session."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def framework_cache(tmp_path_factory) -> Path:
    """Shared by the session's runs, so each framework environment is built once."""
    return tmp_path_factory.mktemp("harness_cache")


@pytest.fixture
def harness_cli(framework_cache, tmp_path):
    """``harness_cli(*args)`` runs ``python -m harness`` with the session cache, in tmp_path."""
    def run(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        env = dict(os.environ, HARNESS_CACHE_DIR=str(framework_cache), PYTHONUNBUFFERED="1")
        env.pop("HARNESS_BLOCK_PLUGINS", None)
        return subprocess.run([sys.executable, "-m", "harness", *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=timeout)
    return run


def smoke_result(harness_cli, *args: str) -> dict:
    """Run a cpu smoke case with --json and return the result, failing with the run's stderr."""
    proc = harness_cli("run", "--vendor", "cpu", "--scale", "smoke", "--json", *args)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def legacy_index(tmp_path: Path, result: dict) -> dict:
    [index_file] = (tmp_path / "results" / result["run_id"] / "index").iterdir()
    return json.loads(index_file.read_text())


def plan_context(tmp_path: Path, case: str, framework: str, *, nproc: int = 1, scale: str = "smoke"):
    """The RunContext `harness run` would build (cpu vendor), without running anything."""
    from harness.app import Harness
    from harness.runner.pipeline import RunRequest, plan

    harness = Harness.load(load_entrypoints=False)
    request = RunRequest(case=case, vendor="cpu", framework=framework, scale=scale, nproc=nproc,
                         output=tmp_path / "results", cache_dir=tmp_path / "cache")
    return plan(harness, request)


def parse_as_launched(context, log_path: Path):
    """Read ``log_path`` the way the core reads a run's log: with the log format the
    framework's launch declares (``harness.runner.attempt.read_log``)."""
    import sys

    from harness.models import DatasetInfo, ExecutionEnv
    from harness.app import Harness
    from harness.runner.pipeline import log_hints

    harness = Harness.load(load_entrypoints=False)
    router = harness.router()
    env = ExecutionEnv(python=sys.executable, framework=context.framework)
    dataset = DatasetInfo(kind=context.case.dataset, path=str(log_path.parent),
                          files=["data_ids.npy", "data_idx.npz"], synthesized=True)
    launch = router.run(context, env, dataset)
    log_format = router.registry.log_formats.get(launch.log_format)
    return log_format.parse_file(log_path, **log_hints(context))


@pytest.fixture
def unsupported_reasons(tmp_path):
    """``reasons(case, framework, **RunRequest fields)``: what the plugins say they cannot run,
    for the run planned from that request on the cpu vendor at smoke scale."""
    from harness.app import Harness
    from harness.runner.pipeline import RunRequest, plan

    harness = Harness.load(load_entrypoints=False)

    def reasons(case: str, framework: str, **fields) -> list[str]:
        request = RunRequest(case=case, vendor="cpu", framework=framework, scale="smoke",
                             output=tmp_path, cache_dir=tmp_path, **fields)
        return harness.router().unsupported_reasons(plan(harness, request))

    return reasons
