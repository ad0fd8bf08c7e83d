"""The PyTorch plugin: its environment (torch's build tag, torchao for fp8) and what it refuses."""

from __future__ import annotations

import pytest


def test_torch_build_tag_matches_the_installed_torch():
    torch = pytest.importorskip("torch")
    from harness_pytorch.plugin import torch_build_tag

    local = torch.__version__.split("+", 1)[1] if "+" in torch.__version__ else None
    assert torch_build_tag() == local


def test_unsupported_reasons_for_fp8_offload_and_optimizer_held_masters(unsupported_reasons):
    def reasons(**fields):
        return unsupported_reasons("gpt3_125M", "pytorch", **fields)

    assert reasons(precision="bf16", set_pairs=["master_weights=optimizer"]) == []
    assert any("runs in bf16 or fp8" in r for r in reasons(set_pairs=["master_weights=optimizer"]))
    # Data parallel, the flat optimizer averages the ranks' gradients; FSDP2 sharding under it is refused.
    assert reasons(precision="bf16", nproc=2, set_pairs=["master_weights=optimizer"]) == []
    assert any("sharding_stage needs offload=none and master_weights=model" in r
               for r in reasons(precision="bf16", nproc=2,
                                set_pairs=["master_weights=optimizer", "sharding_stage=3"]))
    assert any("offload=cpu moves the optimizer" in r for r in reasons(set_pairs=["offload=cpu"]))


def test_gradient_accumulation_fusion_asked_for_where_it_cannot_apply_is_refused(unsupported_reasons):
    def reasons(*pairs, precision="bf16"):
        return unsupported_reasons("gpt3_125M", "pytorch", precision=precision, set_pairs=list(pairs))

    assert any("needs master_weights=optimizer or offload=cpu" in r
               for r in reasons("gradient_accumulation_fusion=true"))
    # On the cpu vendor it has no CUDA product to fuse into.
    assert any("runs on CUDA GPUs" in r
               for r in reasons("gradient_accumulation_fusion=true", "master_weights=optimizer"))
    assert reasons("gradient_accumulation_fusion=false") == []
    assert reasons("master_weights=optimizer") == []  # off by default: nothing to refuse


def test_gradient_accumulation_fusion_from_a_vendor_config_is_not_refused(tmp_path):
    """A vendor config turns it on for its default layout (nvidia gpt3_6.7B); with --precision
    fp8 or without flat gradients the script runs without it, so the run is not refused."""
    from harness_pytorch import plugin
    from tests.plugins.conftest import plan_context

    context = plan_context(tmp_path, "gpt3_125M", "pytorch")
    params = {**context.config.params, "gradient_accumulation_fusion": True}
    sources = {**context.config.sources, "gradient_accumulation_fusion": "vendor:default.toml"}
    config = context.config.model_copy(update={"params": params, "sources": sources})
    assert plugin.unsupported_reason(context=context.model_copy(update={"config": config})) is None
    cli = config.model_copy(update={"sources": {**sources, "gradient_accumulation_fusion": "cli"}})
    assert "needs master_weights=optimizer" in plugin.unsupported_reason(
        context=context.model_copy(update={"config": cli}))


def test_a_vendor_without_a_torch_device_is_an_unsupported_reason(tmp_path):
    """Said before a sweep runs the point, as for every other refusal of the PyTorch plugin."""
    from harness import hookimpl
    from harness.models import DeviceInfo, DeviceSet, VendorSpec
    from harness.models.device import DeviceBackend, FrameworkDevice
    from harness.app import Harness
    from harness.runner.pipeline import RunRequest, plan

    class PaddleOnlyVendor:  # its chips run Paddle, not torch
        @hookimpl
        def register_vendors(self, register):
            backend = DeviceBackend(device_type="acme", addressed_by_local_rank=True,
                                    frameworks={"paddle": FrameworkDevice(device_type="acme")},
                                    precisions=frozenset({"fp32", "bf16"}))
            register(VendorSpec(name="acme", device_kind="npu", backend=backend))

        @hookimpl
        def discover_devices(self, vendor):
            return DeviceSet(vendor="acme", kind="npu", devices=[DeviceInfo(index=0, name="Acme N1")])

    harness = Harness.load(load_entrypoints=False, blocked=set(), extra=(PaddleOnlyVendor(),))
    context = plan(harness, RunRequest(case="gpt3_125M", vendor="acme", framework="pytorch",
                                            scale="smoke", output=tmp_path, cache_dir=tmp_path))
    reasons = harness.router().unsupported_reasons(context)
    assert any("vendor 'acme' declares no torch device" in r for r in reasons)


def _fp8_context(tmp_path):
    """A planned GPT run with its precision set to fp8 afterwards (the cpu vendor has none)."""
    from tests.plugins.conftest import plan_context

    context = plan_context(tmp_path, "gpt3_125M", "pytorch")
    settings = context.config.settings.model_copy(update={"precision": "fp8"})
    return context.model_copy(update={"config": context.config.model_copy(update={"settings": settings})})


def test_fp8_without_torchao_is_refused_with_the_install_command(tmp_path, monkeypatch):
    from importlib import metadata

    from harness.errors import UnavailableError
    from harness_pytorch import plugin

    real = metadata.version

    def version(name):
        if name == "torchao":
            raise metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(plugin.metadata, "version", version)
    with pytest.raises(UnavailableError, match=r"`pip install torchao` or use --precision bf16$"):
        plugin.prepare_env(context=_fp8_context(tmp_path))


def test_fp8_records_the_torchao_version(tmp_path, monkeypatch):
    from importlib import metadata

    from harness_pytorch import plugin

    real = metadata.version
    monkeypatch.setattr(plugin.metadata, "version",
                        lambda name: "0.14.1" if name == "torchao" else real(name))
    env = plugin.prepare_env(context=_fp8_context(tmp_path))
    assert env.packages["torchao"] == "0.14.1"
    from tests.plugins.conftest import plan_context

    fp32 = plan_context(tmp_path / "fp32", "gpt3_125M", "pytorch")
    assert "torchao" not in plugin.prepare_env(context=fp32).packages  # only fp8 needs it


def test_offload_in_fp16_is_refused_before_launch_as_the_script_refuses_it(tmp_path):
    """train_gpt.py exits 2 on offload=cpu in fp16; the plugin says so before anything runs."""
    from harness.models import DeviceInfo, DeviceSet
    from harness_pytorch import plugin
    from tests.plugins.conftest import plan_context

    def on_a_gpu(precision):
        context = plan_context(tmp_path / precision, "gpt3_125M", "pytorch")
        settings = context.config.settings.model_copy(update={"precision": precision})
        params = {**context.config.params, "offload": "cpu"}
        config = context.config.model_copy(update={"settings": settings, "params": params})
        devices = DeviceSet(vendor="nvidia", kind="gpu", devices=[DeviceInfo(index=0, name="NVIDIA H100")])
        return context.model_copy(update={"config": config, "devices": devices})

    assert "use --precision bf16" in plugin.unsupported_reason(context=on_a_gpu("fp16"))
    assert plugin.unsupported_reason(context=on_a_gpu("bf16")) is None


def test_bert_refusal_is_one_line_exit_2_before_anything_runs(tmp_path):
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "harness", "run", "--vendor", "cpu", "--framework",
                           "pytorch", "--case", "bert_base_seq128", "--scale", "smoke",
                           "--max-steps", "2", "--output", str(tmp_path / "results")],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "HARNESS_CACHE_DIR": str(tmp_path / "cache")})
    assert done.returncode == 2 and "Traceback" not in done.stderr
    # BERT's throughput covers the steps after skip_steps: the core's rule, for every case
    assert "skip_steps 5 leaves no step to measure in max_steps 2" in done.stderr
    assert not (tmp_path / "cache" / "data").exists()  # refused before the data were made


def test_fp8_on_cpu_devices_names_the_gpus_that_have_it(tmp_path):
    """A vendor of cpu devices that declares fp8 (the cpu vendor itself does not): the refusal
    names the GPUs train_gpt.py accepts, compute capability 8.9 on (Ada as well as Hopper)."""
    from harness_pytorch import plugin
    from tests.plugins.conftest import plan_context

    context = plan_context(tmp_path, "gpt3_125M", "pytorch")
    settings = context.config.settings.model_copy(update={"precision": "fp8"})
    context = context.model_copy(update={"config": context.config.model_copy(update={"settings": settings})})
    assert context.devices.kind == "cpu"
    assert plugin.unsupported_reason(context=context) == (
        "fp8 training needs a GPU with fp8 tensor cores (Ada, Hopper or newer); use bf16")
