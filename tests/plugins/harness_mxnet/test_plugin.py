"""The MXNet plugin says what it cannot run before a sweep runs it."""

from __future__ import annotations


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
    assert any("needs a GPU" in r for r in reasons(precision="fp16"))
