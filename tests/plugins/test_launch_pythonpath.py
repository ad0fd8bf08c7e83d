"""Every framework's launch puts its script modules and the shared ones on PYTHONPATH in front
of the caller's, which stays (``harness_cases.shared_scripts.scripts_pythonpath``)."""

from __future__ import annotations

import importlib
import sys

import pytest

from harness.models import DatasetInfo, ExecutionEnv
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR
from tests.plugins.conftest import plan_context


@pytest.mark.parametrize("framework", ["pytorch", "paddle", "mxnet"])
def test_launch_keeps_the_callers_pythonpath_behind_its_own(tmp_path, monkeypatch, framework):
    plugin = importlib.import_module(f"harness_{framework}.plugin")
    monkeypatch.setenv("PYTHONPATH", "/opt/site-extra")
    context = plan_context(tmp_path, "mobilenet_v1", framework)
    env = ExecutionEnv(python=sys.executable, framework=framework)
    dataset = DatasetInfo(kind="images-uint8", path=str(tmp_path), files=["images.bin"], synthesized=True)
    launch = plugin.run(context=context, env=env, dataset=dataset)
    assert launch.env["PYTHONPATH"].split(":") == [str(plugin.SCRIPTS), str(SHARED_SCRIPTS_DIR),
                                                   "/opt/site-extra"]
