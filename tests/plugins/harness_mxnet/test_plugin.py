"""The MXNet plugin says what it cannot run before a sweep runs it."""

from __future__ import annotations

import pytest


def test_unsupported_reasons(unsupported_reasons):
    def reasons(**fields):
        return unsupported_reasons("mobilenet_v1", "mxnet", **fields)

    assert reasons() == []
    assert any("bf16" in r for r in reasons(precision="bf16"))
    from harness.errors import UnavailableError

    # The cpu vendor's device backend declares no fp16: refused when the run is planned.
    with pytest.raises(UnavailableError, match="vendor 'cpu' has no fp16"):
        reasons(precision="fp16")


def test_compile_is_refused_not_ignored(unsupported_reasons):
    """The MXNet script has no compile step: a compiled run would be recorded with a setting it
    never had."""
    assert unsupported_reasons("resnet50", "mxnet", set_pairs=["compile=true"]) == [
        "compile=true: the MXNet plugin has no compile step (its Gluon models always run "
        "hybridized); run it with compile=false"]


def test_multi_node_is_refused_before_launch(unsupported_reasons, monkeypatch):
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.1")
    monkeypatch.setenv("HARNESS_JOB_ID", "job-7")
    monkeypatch.setenv("NODE_RANK", "0")
    [reason] = unsupported_reasons("mobilenet_v1", "mxnet", nproc=1, nnodes=2)
    assert reason.startswith("the MXNet plugin trains on one node")


def test_launch_keeps_the_callers_pythonpath_behind_its_own(tmp_path, monkeypatch):
    import sys

    from harness.models import DatasetInfo, ExecutionEnv
    from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR
    from harness_mxnet import plugin
    from tests.plugins.conftest import plan_context

    monkeypatch.setenv("PYTHONPATH", "/opt/site-extra")
    context = plan_context(tmp_path, "mobilenet_v1", "mxnet")
    env = ExecutionEnv(python=sys.executable, framework="mxnet")
    dataset = DatasetInfo(kind="images-uint8", path=str(tmp_path), files=["images.bin"], synthesized=True)
    launch = plugin.run(context=context, env=env, dataset=dataset)
    assert launch.env["PYTHONPATH"].split(":") == [str(plugin.SCRIPTS), str(SHARED_SCRIPTS_DIR),
                                                   "/opt/site-extra"]
