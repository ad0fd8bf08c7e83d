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
    monkeypatch.setenv("HARNESS_JOB_SECRET", "s" * 32)
    [reason] = unsupported_reasons("mobilenet_v1", "mxnet", nproc=1, nnodes=2)
    assert reason.startswith("the MXNet plugin trains on one node")

