"""The MXNet plugin says what it cannot run before a sweep runs it."""

from __future__ import annotations

import pytest


def test_unsupported_reasons(tmp_path):
    from harness.dispatch import HookRouter
    from harness.plugin_manager import make_plugin_manager
    from harness.registry import Registry
    from harness.runner.pipeline import RunRequest, plan

    pm = make_plugin_manager(load_entrypoints=False)
    registry = Registry.from_plugins(pm)

    def reasons(**fields):
        request = RunRequest(case="mobilenet_v1", vendor="cpu", framework="mxnet", scale="smoke",
                             output=tmp_path, cache_dir=tmp_path, **fields)
        return HookRouter(pm, registry).unsupported_reasons(plan(pm, registry, request))

    assert reasons() == []
    assert any("bf16" in r for r in reasons(precision="bf16"))
    from harness.errors import UnavailableError

    # The cpu vendor's device backend declares no fp16: refused when the run is planned.
    with pytest.raises(UnavailableError, match="vendor 'cpu' has no fp16"):
        reasons(precision="fp16")
