"""The Megatron plugin: torchrun argv, layout checks, refusal without NVIDIA GPUs, log parsing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from harness.errors import UnavailableError, UserInputError
from harness.models import DatasetInfo, DeviceInfo, DeviceSet, ExecutionEnv
from harness.app import Harness
from harness.runner.pipeline import RunRequest, plan
from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR
from harness_megatron import plugin
from tests.plugins.conftest import parse_as_launched


@pytest.fixture
def harness():
    return Harness.load(load_entrypoints=False)


def gpu_context(harness, tmp_path, case, nproc=None, gpus=8, **kw):
    """Plan on the cpu vendor, then give the context NVIDIA devices and the nvidia vendor's
    device backend (no GPU here)."""
    from harness_nvidia.plugin import BACKEND

    context = plan(harness, RunRequest(
        case=case, framework="megatron", vendor="cpu", nproc=nproc, output=tmp_path, **kw))
    devices = DeviceSet(vendor="nvidia", kind="gpu",
                        devices=[DeviceInfo(index=i, name="NVIDIA H200") for i in range(gpus)])
    config = context.config.model_copy(update={"device": BACKEND})
    return context.model_copy(update={"devices": devices, "config": config})


ENV = ExecutionEnv(python="/usr/bin/python3", framework="megatron", framework_version="0.19.2")
DATA = DatasetInfo(kind="gpt-npy", path="/data/gpt", files=["synthetic_ids.npy", "synthetic_idx.npz"],
                   synthesized=True)


def test_matrix_cases_are_registered_for_megatron(harness):
    registry = harness.registry
    assert "DP_1x1x1_2_1536x16" in registry.cases
    assert "megatron" in registry.frameworks_for(registry.cases.get("gpt3_1.3B"))


def test_argv_single_gpu_is_torchrun_standalone(harness, tmp_path):
    context = gpu_context(harness, tmp_path, "DP_1x1x1_2_1536x16")
    launch = plugin.run(context=context, env=ENV, dataset=DATA)
    argv = launch.argv
    assert argv[:5] == ["/usr/bin/python3", "-m", "torch.distributed.run", "--nproc-per-node=1",
                        "--standalone"]
    assert argv[5].endswith("harness_megatron/scripts/train_megatron_gpt.py")
    assert argv[argv.index("--config") + 1] == str(context.run_dir / "config.json")
    assert argv[argv.index("--data-prefix") + 1] == "/data/gpt/synthetic"
    # 6N + 12·L·h·s for hidden 1536 x 16 layers, seq 2048, vocab 50304.
    assert float(argv[argv.index("--flops-per-token") + 1]) == 3_806_300_160.0
    assert launch.env["CUDA_DEVICE_MAX_CONNECTIONS"] == "1"
    assert launch.env["PYTHONPATH"].split(":")[0] == str(SHARED_SCRIPTS_DIR)
    assert launch.log_format == "megatron" and launch.nproc == 1


def test_launch_keeps_the_callers_pythonpath_behind_the_shared_scripts(harness, tmp_path, monkeypatch):
    """As every framework's launch (tests/plugins/test_launch_pythonpath.py): Megatron-core
    installed on the caller's PYTHONPATH stays importable."""
    monkeypatch.setenv("PYTHONPATH", "/opt/megatron-lm")
    launch = plugin.run(context=gpu_context(harness, tmp_path, "DP_1x1x1_2_1536x16"), env=ENV, dataset=DATA)
    assert launch.env["PYTHONPATH"].split(":") == [str(SHARED_SCRIPTS_DIR), "/opt/megatron-lm"]


def test_argv_tensor_parallel_case(harness, tmp_path):
    context = gpu_context(harness, tmp_path, "2D_2x4x1_16_1536x16")
    launch = plugin.run(context=context, env=ENV, dataset=DATA)
    assert "--nproc-per-node=8" in launch.argv
    assert context.config.params["tensor_parallel_degree"] == 4
    assert context.config.settings.micro_batch_size == 8


def test_argv_multi_node_needs_master_addr(harness, tmp_path, monkeypatch):
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    monkeypatch.setenv("HARNESS_JOB_ID", "job-7")
    monkeypatch.setenv("NODE_RANK", "1")
    with pytest.raises(UserInputError, match="MASTER_ADDR"):  # found when the run is planned
        gpu_context(harness, tmp_path, "DP_16x1x1_32_1536x16")
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.1")
    monkeypatch.delenv("MASTER_PORT", raising=False)
    monkeypatch.setenv("HARNESS_JOB_SECRET", "s" * 32)
    context = gpu_context(harness, tmp_path, "DP_16x1x1_32_1536x16")
    assert context.config.settings.nnodes == 2
    argv = plugin.run(context=context, env=ENV, dataset=DATA).argv
    from harness.launch import derived_port

    assert "--nnodes=2" in argv and f"--rdzv-endpoint=10.0.0.1:{derived_port('job-7')}" in argv
    assert "--rdzv-id=job-7" in argv and "--node-rank=1" in argv and "--max-restarts=0" in argv
    assert "--standalone" not in argv


def test_layout_must_match_the_name_before_launch(harness, tmp_path):
    """Refused through unsupported_reason (before anything runs, a sweep skips the point), not
    by the launch once the run has started."""
    context = gpu_context(harness, tmp_path, "DP_8x1x1_16_1536x16", nproc=4)
    assert "dp 8 x tp 1 x pp 1 = 8 GPUs; this run has 4" in plugin.unsupported_reason(context=context)
    assert plugin.unsupported_reason(context=gpu_context(harness, tmp_path, "DP_8x1x1_16_1536x16")) is None


@pytest.mark.parametrize("nproc, pairs, reason", [
    (4, ["tensor_parallel_degree=3"], "world size 4 is not a multiple of tensor parallel 3 x pipeline parallel 1"),
    (8, ["tensor_parallel_degree=8"], "2 layers / 4 heads / vocab 2048 do not divide into pipeline parallel 1 / tensor parallel 8"),
    (4, ["pipeline_parallel_degree=4"], "2 layers / 4 heads / vocab 2048 do not divide into pipeline parallel 4"),
    # The script divides the world size by tp x pp: a degree below 1 would end it with a traceback.
    (4, ["tensor_parallel_degree=0"], "tensor parallel 0 / pipeline parallel 1: each degree is a whole number of at least 1"),
    (4, ["pipeline_parallel_degree=-1"], "tensor parallel 1 / pipeline parallel -1: each degree is a whole number of at least 1"),
])
def test_parallel_degrees_must_divide_before_launch(harness, tmp_path, nproc, pairs, reason):
    context = gpu_context(harness, tmp_path, "gpt3_1.3B", nproc=nproc, scale="smoke", set_pairs=pairs)
    assert reason in plugin.unsupported_reason(context=context)
    fits = gpu_context(harness, tmp_path / "fits", "gpt3_1.3B", nproc=4, scale="smoke",
                       set_pairs=["tensor_parallel_degree=2", "pipeline_parallel_degree=2"])
    assert plugin.unsupported_reason(context=fits) is None


def test_gpt3_cases_run_on_any_world_size(harness, tmp_path):
    context = gpu_context(harness, tmp_path, "gpt3_1.3B", nproc=4)
    assert "--nproc-per-node=4" in plugin.run(context=context, env=ENV, dataset=DATA).argv


def test_other_frameworks_are_not_routed_here(harness, tmp_path):
    """The core calls the megatron plugin for --framework megatron only (harness.dispatch)."""

    registry = harness.registry
    router = harness.router()
    assert registry.frameworks.owner("megatron") == "harness_megatron.plugin"
    context = plan(harness, RunRequest(case="gpt3_1.3B", framework="pytorch", output=tmp_path))
    launch = router.run(context, ENV, DATA)
    assert str(plugin.SCRIPT) not in launch.argv and "train_gpt.py" in " ".join(launch.argv)


def test_refuses_without_nvidia_gpus(harness, tmp_path):
    context = plan(harness, RunRequest(
        case="DP_1x1x1_2_1536x16", framework="megatron", vendor="cpu", output=tmp_path))
    with pytest.raises(UnavailableError, match="needs NVIDIA GPUs"):
        plugin.prepare_env(context=context)


def test_trains_an_equivalence_check_on_the_cpu_in_one_process_only(harness, tmp_path):
    """`harness equivalence` runs Megatron-core's GPTModel on the CPU (one process); an
    ordinary run or a check over several processes is still refused there."""
    from harness.models.config import EquivalenceSetting

    context = plan(harness, RunRequest(case="gpt3_125M", framework="megatron", vendor="cpu",
                                       scale="smoke", output=tmp_path))
    assert "needs NVIDIA GPUs" in plugin.unsupported_reason(context=context)
    check = EquivalenceSetting(trace=str(tmp_path / "t.json"), final_state=str(tmp_path / "f.npz"))
    equivalence = context.model_copy(update={"config": context.config.model_copy(
        update={"equivalence": check})})
    assert plugin.unsupported_reason(context=equivalence) is None
    assert "gpt" in harness.registry.frameworks.get("megatron").equivalence_models
    two = equivalence.model_copy(update={"config": equivalence.config.model_copy(update={
        "settings": equivalence.config.settings.model_copy(update={"nproc": 2})})})
    assert "needs NVIDIA GPUs" in plugin.unsupported_reason(context=two)
    gpus = gpu_context(harness, tmp_path, "gpt3_125M", scale="smoke")
    assert plugin.unsupported_reason(context=gpus) is None
    gpu_check = gpus.model_copy(update={"config": gpus.config.model_copy(update={"equivalence": check})})
    assert "trains on the CPU" in plugin.unsupported_reason(context=gpu_check)


def test_refuses_without_megatron_core(harness, tmp_path, monkeypatch):
    from importlib import util

    real = util.find_spec
    monkeypatch.setattr(util, "find_spec",
                        lambda name, *a: None if name.startswith("megatron") else real(name, *a))
    context = gpu_context(harness, tmp_path, "DP_1x1x1_2_1536x16")
    with pytest.raises(UnavailableError, match="megatron-core"):
        plugin.prepare_env(context=context)


def test_cli_refusal_is_one_line_exit_2(tmp_path):
    import subprocess

    done = subprocess.run([sys.executable, "-m", "harness", "run", "--vendor", "cpu", "--framework",
                           "megatron", "--case", "DP_1x1x1_2_1536x16", "--output", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "needs NVIDIA GPUs" in done.stderr and "Traceback" not in done.stderr


def test_parses_the_scripts_iteration_lines(harness, tmp_path):
    log = tmp_path / "train.log"
    log.write_text(
        " iteration        1/      30 | consumed samples:            2 | elapsed time per iteration"
        " (ms): 912.4 | throughput per GPU (TFLOP/s/GPU): 17.1 | learning rate: 1.500000E-05 |"
        " global batch size:     2 | lm loss: 1.120117E+01 | loss scale: 1.0 | grad norm: 7.904 |"
        " number of skipped iterations:   0 | number of nan iterations:   0 |\n"
        "[Rank 0] (after 30 iterations) memory (MB) | allocated: 9245.8 | max allocated: 13725.3 |"
        " reserved: 14558.0 | max reserved: 14558.0\n")
    context = gpu_context(harness, tmp_path, "DP_1x1x1_2_1536x16")
    parsed = parse_as_launched(context, log)
    assert parsed.steps[0].step_time_s == pytest.approx(0.9124)
    assert parsed.steps[0].throughput == pytest.approx(2 * 2048 / 0.9124)
    assert parsed.peak_memory_bytes == int(13725.3 * 2**20)


@pytest.mark.parametrize("pairs, reason", [
    (["compile=true"], "does not torch.compile its model"),
    (["attention_backend=flash"], "attention_backend=flash: the Megatron-core plugin runs attention through auto or local"),
    (["attention_backend=cudnn"], "attention_backend=cudnn"),
])
def test_gpt_case_settings_the_script_ignores_are_refused(harness, tmp_path, pairs, reason):
    """A GPT case lets PyTorch compile and pick an SDPA kernel; the Megatron-core script does
    neither, so it says so instead of recording settings the run never had."""
    context = gpu_context(harness, tmp_path, "gpt3_1.3B", nproc=1, set_pairs=pairs)
    assert reason in plugin.unsupported_reason(context=context)
    plain = gpu_context(harness, tmp_path / "plain", "gpt3_1.3B", nproc=1, set_pairs=["attention_backend=local"])
    assert plugin.unsupported_reason(context=plain) is None


@pytest.mark.parametrize("precision, asked, held", [
    ("bf16", "model", "optimizer"), ("fp32", "optimizer", "model"),
])
def test_master_weights_other_than_megatrons_are_refused(harness, tmp_path, precision, asked, held):
    """Megatron-core keeps fp32 masters in its optimizer in bf16/fp16 and trains fp32 parameters
    in fp32: a run asking for the other layout would record one it never had."""
    context = gpu_context(harness, tmp_path, "gpt3_1.3B", nproc=1, precision=precision,
                          set_pairs=[f"master_weights={asked}"])
    assert (f"master_weights={asked}: in {precision} Megatron-core keeps the fp32 master weights"
            in plugin.unsupported_reason(context=context))
    honoured = gpu_context(harness, tmp_path / "held", "gpt3_1.3B", nproc=1, precision=precision,
                           set_pairs=[f"master_weights={held}"])
    assert plugin.unsupported_reason(context=honoured) is None


def test_nvidia_megatron_configs_ask_for_the_masters_megatron_keeps(harness):
    """The nvidia vendor's bf16 Megatron configs of GPT cases must not be refused by the rule above."""
    from harness_nvidia.plugin import vendor_case_config

    registry = harness.registry
    for name in ("gpt3_1.3B", "gpt3_6.7B"):
        config = vendor_case_config(vendor="nvidia", case=registry.cases.get(name), framework="megatron",
                                    nproc=1, nnodes=1, hardware_config=None)
        assert config.values["precision"] == "bf16" and config.values["master_weights"] == "optimizer"


def test_fused_optimizer_false_keeps_torchs_foreach_adamw(monkeypatch):
    """fused_optimizer=false is honoured: the script leaves Megatron-core's AdamW in torch's
    multi-tensor mode instead of switching it to the fused kernel."""
    torch = pytest.importorskip("torch")
    script = _import_script(monkeypatch)

    def optimizer():
        inner = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))], foreach=True)
        return type("Chained", (), {"chained_optimizers": [type("W", (), {"optimizer": inner})()]})()

    kept = optimizer()
    assert script.use_fused_torch_adam(kept, fused=False) == 0
    group = kept.chained_optimizers[0].optimizer.param_groups[0]
    assert group["foreach"] is True and not group["fused"]
    switched = optimizer()
    assert script.use_fused_torch_adam(switched, fused=True) == 1
    group = switched.chained_optimizers[0].optimizer.param_groups[0]
    assert group["fused"] is True and group["foreach"] is False


def _import_script(monkeypatch):
    """The training script as a module, on the paths its launch sets (no Megatron-core needed)."""
    import importlib

    monkeypatch.syspath_prepend(str(SHARED_SCRIPTS_DIR))
    monkeypatch.syspath_prepend(str(plugin.SCRIPT.parent))
    return importlib.import_module("train_megatron_gpt")

