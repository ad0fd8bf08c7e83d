"""Megatron-core framework plugin: GPT (``GPTModel``) with TP/PP/DP launched by torchrun."""

from __future__ import annotations

import os
import sys
from importlib import metadata, util
from pathlib import Path

from harness import hookimpl
from harness.errors import UnavailableError, UserInputError
from harness.launch import torchrun_node_arguments
from harness.models import DatasetInfo, ExecutionEnv, FrameworkSpec, LaunchSpec
from harness.models.context import RunContext
from harness_megatron.cases import MEGATRON_ATTENTION

FRAMEWORK = "megatron"
SCRIPT = Path(__file__).parent / "scripts" / "train_megatron_gpt.py"
INSTALL_HINT = "install it with `pip install -e '.[megatron]'` (the megatron-core package)"


@hookimpl
def register_frameworks(register) -> None:
    register(FrameworkSpec(
        name=FRAMEWORK,
        description="Megatron-core GPTModel: tensor/pipeline/data parallel, sequence parallel, "
                    "distributed optimizer (NVIDIA GPUs)",
        models=frozenset({"gpt"}),
        log_format="megatron",
    ))


@hookimpl
def register_cases(register) -> None:
    from harness_megatron.cases import matrix_cases

    for case in matrix_cases():
        register(case)


def _needs_nvidia_gpus(context: RunContext) -> str | None:
    """Megatron-core trains through NCCL and CUDA kernels (its tensor-parallel RNG tracker and
    fused kernels are CUDA's): only a vendor whose device backend gives torch the cuda device
    type runs it."""
    backend = context.config.device
    torch_device = backend.for_framework("torch") if backend else None
    if torch_device is not None and torch_device.device_type == "cuda":
        return None
    declared = f"torch device type {torch_device.device_type!r}" if torch_device else "no torch device"
    return (f"framework megatron needs NVIDIA GPUs (Megatron-core trains through CUDA and NCCL); "
            f"vendor {context.vendor!r} declares {declared}. Run it with --vendor nvidia on a "
            f"machine with NVIDIA GPUs, or use --framework pytorch here.")


@hookimpl
def unsupported_reason(context: RunContext) -> str | None:
    """Settings of the GPT cases that train_megatron_gpt.py does not implement are refused, not
    ignored: the result would record them as the run's settings."""
    params = context.config.params
    if context.config.settings.precision == "fp8":
        return "Megatron-core trains fp8 through Transformer Engine, which this plugin does not use"
    if str(params.get("offload", "none")) != "none":
        return "the Megatron-core plugin keeps its optimizer on the GPU (offload=none)"
    if params.get("compile"):
        return "the Megatron-core plugin does not torch.compile its model; run it with compile=false"
    attention = str(params.get("attention_backend", "auto"))
    if attention not in MEGATRON_ATTENTION:
        return (f"attention_backend={attention}: the Megatron-core plugin runs attention through "
                f"{' or '.join(MEGATRON_ATTENTION)} (scaled_dot_product_attention's own kernel "
                "choice, or Megatron-core's local attention)")
    return _needs_nvidia_gpus(context)


@hookimpl
def prepare_env(context: RunContext) -> ExecutionEnv | None:
    refusal = _needs_nvidia_gpus(context)
    if refusal:
        raise UnavailableError(refusal)
    if util.find_spec("megatron") is None or util.find_spec("megatron.core") is None:
        raise UnavailableError(f"framework megatron needs Megatron-core, which is not installed; "
                               f"{INSTALL_HINT}")
    versions = {}
    for package in ("megatron-core", "torch", "numpy"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "unknown"
    return ExecutionEnv(python=sys.executable, framework=FRAMEWORK,
                        framework_version=versions["megatron-core"], packages=versions,
                        description="current interpreter")


def check_layout(context: RunContext) -> None:
    """A matrix case's name fixes dp x tp x pp: refuse a world size that differs from it."""
    from harness_megatron.case_names import parse_case_name

    try:
        case = parse_case_name(context.case.name)
    except UserInputError:
        return  # not a matrix case (e.g. gpt3_1.3B): any world size the degrees divide
    world = context.config.settings.world_size
    if world != case.world_size:
        raise UserInputError(
            f"case {case.name} is dp {case.dp} x tp {case.tp} x pp {case.pp} = {case.world_size} "
            f"GPUs; this run has {world} (--nproc/--nnodes). Pick a case whose layout fits."
        )


def build_argv(context: RunContext, env: ExecutionEnv, dataset: DatasetInfo,
               flops_per_token: float) -> list[str]:
    """torchrun (even for one GPU: Megatron-core always initialises torch.distributed)."""
    settings = context.config.settings
    prefix = Path(dataset.path) / dataset.files[0].removesuffix("_ids.npy")
    argv = [env.python, "-m", "torch.distributed.run", f"--nproc-per-node={settings.nproc}"]
    argv += torchrun_node_arguments(context)
    argv += [str(SCRIPT), "--config", str(context.run_dir / "config.json"),
             "--data-prefix", str(prefix), "--flops-per-token", repr(flops_per_token)]
    return argv


@hookimpl
def run(context: RunContext, env: ExecutionEnv, dataset: DatasetInfo) -> LaunchSpec | None:
    check_layout(context)
    from harness_cases.gpt_flops import gpt_flops_per_token

    flops = gpt_flops_per_token(context.config.params).per_unit
    from harness_cases.shared_scripts import SHARED_SCRIPTS_DIR, launch_scripts

    # The script reads the data through the torch GPT dataset it shares with the PyTorch
    # plugin's script, so both frameworks read the same tokens in the same order.
    path = os.pathsep.join(filter(None, [str(SHARED_SCRIPTS_DIR), os.environ.get("PYTHONPATH")]))
    launch_env = {
        **env.env,
        "PYTHONPATH": path,
        # Megatron-core orders tensor-parallel communication after compute on one stream
        # queue; sequence parallelism requires it.
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
    }
    return LaunchSpec(argv=build_argv(context, env, dataset, flops), env=launch_env,
                      nproc=context.config.settings.nproc, nnodes=context.config.settings.nnodes,
                      log_format="megatron",
                      description=f"megatron-core {env.framework_version}",
                      scripts=launch_scripts(SCRIPT))
