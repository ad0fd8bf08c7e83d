"""PyTorch framework plugin: GPT, BERT and CNN training scripts, launched with torchrun."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from harness import hookimpl
from harness.launch import torchrun_node_arguments
from harness.models import DatasetInfo, ExecutionEnv, FrameworkSpec, LaunchSpec
from harness.models.context import RunContext
from harness_pytorch.device_check import check_torch_device, torch_device
from harness_cases.gpt_knobs import GptKnobs

FRAMEWORK = "pytorch"
SCRIPTS = Path(__file__).parent / "scripts"
TRAIN_SCRIPTS = {
    "gpt": SCRIPTS / "train_gpt.py",
    "bert": SCRIPTS / "train_bert.py",
    "resnet50": SCRIPTS / "train_cnn.py",
    "mobilenet_v1": SCRIPTS / "train_cnn.py",
}

#: The models whose scripts implement `harness equivalence`'s config section.
EQUIVALENCE_MODELS = frozenset({"gpt", "bert", "resnet50", "mobilenet_v1"})


@hookimpl
def register_frameworks(register) -> None:
    register(FrameworkSpec(
        name=FRAMEWORK,
        description="PyTorch eager/compile, DDP via torchrun",
        models=frozenset(TRAIN_SCRIPTS),
        equivalence_models=EQUIVALENCE_MODELS,
        log_format="megatron",
    ))


@hookimpl
def prepare_env(context: RunContext) -> ExecutionEnv | None:
    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        from harness.errors import UnavailableError

        raise UnavailableError(
            "PyTorch is not installed in this environment; install it with "
            "`pip install -e '.[torch]'` (CPU build) or use a machine that has it"
        ) from None
    packages = {"torch": version, "numpy": metadata.version("numpy")}
    if context.case.model == "bert":  # BertForPreTraining comes from transformers
        try:
            packages["transformers"] = metadata.version("transformers")
        except metadata.PackageNotFoundError:
            from harness.errors import UnavailableError

            raise UnavailableError(
                "the PyTorch BERT case needs transformers; install it with `pip install -e '.[torch]'`"
            ) from None
    if context.config.settings.precision == "fp8":  # Float8Linear comes from torchao
        try:
            packages["torchao"] = metadata.version("torchao")
        except metadata.PackageNotFoundError:
            from harness.errors import UnavailableError

            raise UnavailableError(
                "fp8 training runs on torchao's float8 linears, which are not installed; install "
                "them with `pip install torchao` or use --precision bf16"
            ) from None
    check_torch_device(sys.executable, context.vendor, context.config.device)
    return ExecutionEnv(python=sys.executable, framework=FRAMEWORK, framework_version=version,
                        framework_build=torch_build_tag(), packages=packages,
                        description="current interpreter")


def torch_build_tag() -> str | None:
    """The build tag of the installed torch (``cu132``, ``cpu``): the local label of the
    ``__version__`` in its ``torch/version.py``, which the wheel's metadata version omits.
    Read as text, so harness does not import torch to record it."""
    import ast

    try:
        source = metadata.distribution("torch").locate_file("torch/version.py")
        tree = ast.parse(Path(str(source)).read_text(encoding="utf-8"))
    except (metadata.PackageNotFoundError, OSError, SyntaxError, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__version__" for t in node.targets):
            value = node.value.value if isinstance(node.value, ast.Constant) else None
            if isinstance(value, str) and "+" in value:
                return value.split("+", 1)[1] or None
    return None


@hookimpl
def run(context: RunContext, env: ExecutionEnv, dataset: DatasetInfo) -> LaunchSpec | None:
    settings = context.config.settings
    model = context.case.model
    script_args = [str(TRAIN_SCRIPTS[model]), "--config", str(context.run_dir / "config.json"),
                   *_data_arguments(model, dataset)]
    if settings.world_size == 1:
        argv = [env.python, *script_args]
    else:
        argv = [env.python, "-m", "torch.distributed.run", f"--nproc-per-node={settings.nproc}"]
        argv += torchrun_node_arguments(context)
        argv += script_args
    from harness_cases.shared_scripts import launch_scripts, scripts_pythonpath

    # The scripts import the framework-neutral modules of harness_cases (dataset readers, the
    # learning-rate schedule).
    variables = {**env.env, "PYTHONPATH": scripts_pythonpath(SCRIPTS)}
    return LaunchSpec(argv=argv, env=variables, nproc=settings.nproc, nnodes=settings.nnodes,
                      log_format=LOG_FORMATS.get(model, "megatron"),
                      description=f"torch {env.framework_version}",
                      scripts=launch_scripts(TRAIN_SCRIPTS[model], SCRIPTS))


@hookimpl
def matmul_probe(context: RunContext, env: ExecutionEnv):
    """torch matmuls on the vendor's torch device at the run's precision (shared_scripts)."""
    from harness_cases.shared_scripts import run_matmul_probe

    return run_matmul_probe(env, "torch", context.config.device, context.config.settings.precision)


LOG_FORMATS = {"bert": "dllogger", "resnet50": "pytorch_dle", "mobilenet_v1": "pytorch_dle"}


def _data_arguments(model: str, dataset: DatasetInfo) -> list[str]:
    folder = Path(dataset.path)
    if model == "gpt":
        return ["--data-prefix", str(folder / dataset.files[0].removesuffix("_ids.npy"))]
    if model == "bert":
        return ["--data", str(folder / dataset.files[0])]
    return ["--data", str(folder), "--model", model]


@hookimpl
def memory_plan(context: RunContext, device_memory_bytes: int):
    """GPT's per-GPU peak as train_gpt.py lays it out, and smaller-memory variants."""
    if context.case.model != "gpt":
        return None
    from harness.memory_planner import usable_bytes
    from harness_pytorch.gpt_memory import memory_plan as gpt_memory_plan

    return gpt_memory_plan(context.config.params, context.config.settings,
                           usable_hint=usable_bytes(device_memory_bytes))


@hookimpl
def unsupported_reason(context: RunContext) -> str | None:
    """What the PyTorch scripts would refuse on this machine, said before anything runs: a
    vendor whose device backend has no torch entry, the BERT script's measured window, and the
    GPT script's precision and optimizer-placement rules."""
    from harness.errors import HarnessError

    try:
        torch_device(context.vendor, context.config.device)
    except HarnessError as exc:
        return str(exc)
    settings, params = context.config.settings, context.config.params
    if settings.precision == "fp8":
        if context.case.model != "gpt":
            return "fp8 training is implemented for the GPT cases only (torchao float8)"
        if context.devices.kind == "cpu":
            return "fp8 training needs a GPU with fp8 tensor cores (Ada, Hopper or newer); use bf16"
    # The GPT knobs (other models' params have none of them, or other meanings: BERT's recompute)
    knobs = GptKnobs.of(params) if context.case.model == "gpt" else GptKnobs()
    offload = knobs.offload == "cpu"
    optimizer_masters = knobs.master_weights == "optimizer"
    if offload:
        if context.devices.kind == "cpu":
            return ("offload=cpu moves the optimizer from an accelerator's memory to the host; "
                    "on the cpu vendor everything is in host memory already")
        if settings.precision == "fp16":  # train_gpt.py refuses it too
            return ("offload=cpu runs in bf16 or fp32 (its host optimizer has no fp16 loss "
                    "scaling); use --precision bf16")
    if optimizer_masters and settings.precision not in ("bf16", "fp8"):
        return ("master_weights=optimizer keeps bf16 weights beside fp32 masters; it runs in "
                f"bf16 or fp8, use master_weights=model for {settings.precision}")
    if (offload or optimizer_masters) and settings.world_size > 1 and knobs.sharding_stage > 0:
        return ("offload=cpu and master_weights=optimizer train data parallel (every rank holds "
                "the whole model); sharding_stage needs offload=none and master_weights=model")
    from harness.config_resolution import CLI_SOURCE

    # Asked for on the command line where it cannot apply: said here rather than ignored
    # (set by a vendor config, train_gpt.py just runs without it and its log says why).
    if knobs.gradient_accumulation_fusion and context.config.sources.get(
            "gradient_accumulation_fusion") == CLI_SOURCE:
        if not (offload or optimizer_masters):
            return ("gradient_accumulation_fusion=true adds weight gradients into the optimizer's "
                    "flat fp32 gradients: it needs master_weights=optimizer or offload=cpu")
        if context.devices.kind == "cpu" or settings.precision == "fp8":
            return ("gradient_accumulation_fusion=true runs on CUDA GPUs in bf16 (fp8's linears "
                    "are torchao's); leave it off here")
    return None
