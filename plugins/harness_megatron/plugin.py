"""Megatron-core framework plugin: GPT (``GPTModel``) with TP/PP/DP launched by torchrun."""

from __future__ import annotations

import sys
from importlib import metadata, util
from pathlib import Path

from harness import hookimpl
from harness.errors import UnavailableError, UserInputError
from harness.launch import torchrun_node_arguments
from harness.models import DatasetInfo, ExecutionEnv, FrameworkSpec, LaunchSpec
from harness.models.context import RunContext
from harness_megatron.cases import MEGATRON_ATTENTION
from harness_cases.gpt_knobs import GptKnobs

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
        model_parallel=frozenset({"tensor", "pipeline"}),
        # One process on the CPU (megatron_equivalence_training.py), on any vendor whose torch
        # device is the CPU.
        equivalence_models=frozenset({"gpt"}),
    ))


@hookimpl
def register_cases(register) -> None:
    from harness_megatron.cases import matrix_cases

    for case in matrix_cases():
        register(case)


def _needs_nvidia_gpus(context: RunContext) -> str | None:
    """Megatron-core trains through NCCL and CUDA kernels (its tensor-parallel RNG tracker and
    fused kernels are CUDA's): only a vendor whose device backend gives torch the cuda device
    type runs it; a one-process `harness equivalence` run also trains on the CPU."""
    backend = context.config.device
    torch_device = backend.for_framework("torch") if backend else None
    if torch_device is not None and torch_device.device_type == "cuda":
        if context.config.equivalence is not None:  # the GPU script writes no trace
            return ("Megatron-core's `harness equivalence` run trains on the CPU (one process, "
                    "megatron_equivalence_training.py); run the check with --vendor cpu")
        return None
    if (torch_device is not None and torch_device.device_type == "cpu"
            and context.config.equivalence is not None and context.config.settings.world_size == 1):
        return None  # `harness equivalence`: one process trains GPTModel on the CPU
    declared = f"torch device type {torch_device.device_type!r}" if torch_device else "no torch device"
    return (f"framework megatron needs NVIDIA GPUs (Megatron-core trains through CUDA and NCCL); "
            f"vendor {context.vendor!r} declares {declared}. Run it with --vendor nvidia on a "
            f"machine with NVIDIA GPUs, or use --framework pytorch here.")


@hookimpl
def unsupported_reason(context: RunContext) -> str | None:
    """Settings of the GPT cases that train_megatron_gpt.py does not implement are refused, not
    ignored: the result would record them as the run's settings."""
    knobs = GptKnobs.of(context.config.params)
    if context.config.settings.precision == "fp8":
        return "Megatron-core trains fp8 through Transformer Engine, which this plugin does not use"
    if knobs.offload != "none":
        return "the Megatron-core plugin keeps its optimizer on the GPU (offload=none)"
    if knobs.compile:
        return "the Megatron-core plugin does not torch.compile its model; run it with compile=false"
    attention = knobs.attention_backend
    if attention not in MEGATRON_ATTENTION:
        return (f"attention_backend={attention}: the Megatron-core plugin runs attention through "
                f"{' or '.join(MEGATRON_ATTENTION)} (scaled_dot_product_attention's own kernel "
                "choice, or Megatron-core's local attention)")
    return _master_weights_refusal(context) or _layout_refusal(context) or _needs_nvidia_gpus(context)


def _master_weights_refusal(context: RunContext) -> str | None:
    """Megatron-core decides where the fp32 master weights live from the precision alone: in
    bf16/fp16 its Float16Module holds compute-dtype weights and the optimizer the fp32 masters
    (``master_weights=optimizer``); in fp32 the model's own parameters are the masters
    (``master_weights=model``). A case parameter asking for the other is refused."""
    asked = context.config.params.get("master_weights")
    if asked is None:  # the matrix cases have no such key
        return None
    precision = context.config.settings.precision
    held = "model" if precision == "fp32" else "optimizer"
    if str(asked) == held:
        return None
    return (f"master_weights={asked}: in {precision} Megatron-core keeps the fp32 master weights "
            f"in {'the model (fp32 parameters)' if held == 'model' else 'its optimizer'}; "
            f"run it with master_weights={held}")


def _layout_refusal(context: RunContext) -> str | None:
    """The process layout the script would refuse after launch, said before: a matrix case's
    name fixes dp x tp x pp, and tp x pp must divide the world size, the layers (pp) and the
    heads and vocabulary (tp)."""
    from harness_megatron.case_names import parse_case_name

    world = context.config.settings.world_size
    try:
        case = parse_case_name(context.case.name)
    except UserInputError:
        pass  # not a matrix case (e.g. gpt3_1.3B): any world size the degrees divide
    else:
        if world != case.world_size:
            return (f"case {case.name} is dp {case.dp} x tp {case.tp} x pp {case.pp} = "
                    f"{case.world_size} GPUs; this run has {world} (--nproc/--nnodes). "
                    "Pick a case whose layout fits.")
    p = context.config.params
    knobs = GptKnobs.of(p)  # a 0 here must be refused, not taken for 1
    tp, pp = knobs.tensor_parallel_degree, knobs.pipeline_parallel_degree
    if tp < 1 or pp < 1:
        return (f"tensor parallel {tp} / pipeline parallel {pp}: each degree is a whole number "
                "of at least 1")
    if world % (tp * pp):
        return f"world size {world} is not a multiple of tensor parallel {tp} x pipeline parallel {pp}"
    if p["num_layers"] % pp or p["num_heads"] % tp or p["vocab_size"] % tp:
        return (f"{p['num_layers']} layers / {p['num_heads']} heads / vocab {p['vocab_size']} "
                f"do not divide into pipeline parallel {pp} / tensor parallel {tp}")
    return None


@hookimpl
def memory_plan(context: RunContext, device_memory_bytes: int):
    """GPT's per-GPU peak as train_megatron_gpt.py lays it out, and smaller-memory variants.

    A config the plugin refuses (``unsupported_reason``) gets no plan: its refusal says what
    is wrong, and the layout may not even divide (the estimate would be meaningless)."""
    if context.case.model != "gpt" or unsupported_reason(context) is not None:
        return None
    from harness.memory_planner import usable_bytes
    from harness_megatron.megatron_memory import RECOMPUTE_ORDER
    from harness_megatron.megatron_memory import memory_plan as megatron_memory_plan

    return megatron_memory_plan(
        context.config.params, context.config.settings,
        recompute_choices=context.case.choices.get("recompute", RECOMPUTE_ORDER),
        layout_fixed="tensor_parallel_degree" in context.case.immutable,
        usable_hint=usable_bytes(device_memory_bytes))


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


@hookimpl
def matmul_probe(context: RunContext, env: ExecutionEnv):
    """torch matmuls on the vendor's torch device at the run's precision (shared_scripts)."""
    from harness_cases.shared_scripts import run_matmul_probe

    return run_matmul_probe(env, "torch", context.config.device, context.config.settings.precision)


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
    from harness_cases.gpt_flops import gpt_flops_per_token

    flops = gpt_flops_per_token(context.config.params).per_unit
    from harness_cases.shared_scripts import launch_scripts, scripts_pythonpath

    # The script reads the data through the torch GPT dataset it shares with the PyTorch
    # plugin's script, so both frameworks read the same tokens in the same order.
    launch_env = {
        **env.env,
        "PYTHONPATH": scripts_pythonpath(),
        # Megatron-core orders tensor-parallel communication after compute on one stream
        # queue; sequence parallelism requires it.
        "CUDA_DEVICE_MAX_CONNECTIONS": "1",
    }
    return LaunchSpec(argv=build_argv(context, env, dataset, flops), env=launch_env,
                      nproc=context.config.settings.nproc, nnodes=context.config.settings.nnodes,
                      log_format="megatron",
                      description=f"megatron-core {env.framework_version}",
                      scripts=launch_scripts(SCRIPT, SCRIPT.parent))
