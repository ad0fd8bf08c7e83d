"""PaddlePaddle framework plugin: GPT, BERT, ResNet-50 and MobileNetV1 in an isolated environment.

The training scripts under ``scripts/`` run with the interpreter of a virtual environment
that holds only Paddle and its dependencies (built once by ``harness.envs``), directly for
one process or under ``paddle.distributed.launch`` for several (``scripts/distributed_launch.py``).
"""

from __future__ import annotations

from pathlib import Path

from harness import hookimpl
from harness.envs import EnvSpec
from harness.envs.prepare import current_env, isolated_env, vendor_env_spec
from harness.models import DatasetInfo, ExecutionEnv, FrameworkSpec, LaunchSpec
from harness.models.context import RunContext

FRAMEWORK = "paddle"
SCRIPTS = Path(__file__).parent / "scripts"
TRAIN_SCRIPTS = {
    "gpt": SCRIPTS / "train_gpt.py",
    "bert": SCRIPTS / "train_bert.py",
    "resnet50": SCRIPTS / "train_cnn.py",
    "mobilenet_v1": SCRIPTS / "train_cnn.py",
}
#: The models whose scripts implement `harness equivalence`'s config section.
EQUIVALENCE_MODELS = frozenset({"gpt", "bert", "resnet50", "mobilenet_v1"})
CNN_MODELS = frozenset({"resnet50", "mobilenet_v1"})
PADDLE_VERSION = "3.3.1"
# The scripts' own imports besides paddle (numpy comes with paddle); setuptools because
# paddle imports it at start-up but does not declare it.
_COMMON = ("h5py>=3", "setuptools")
# Per vendor: the build of Paddle for its devices. Paddle's GPU wheels come from Paddle's
# own package index (CUDA 12.6 build).
REQUIREMENTS = {
    "cpu": EnvSpec(name="paddle-cpu", requirements=(f"paddlepaddle=={PADDLE_VERSION}", *_COMMON)),
    "nvidia": EnvSpec(name="paddle-cu126",
                      requirements=(f"paddlepaddle-gpu=={PADDLE_VERSION}", *_COMMON),
                      index_urls=("https://www.paddlepaddle.org.cn/packages/stable/cu126/",)),
}


@hookimpl
def register_frameworks(register) -> None:
    register(FrameworkSpec(
        name=FRAMEWORK,
        description=f"PaddlePaddle {PADDLE_VERSION} dygraph, paddle.distributed.launch, fleet hybrid",
        models=frozenset(TRAIN_SCRIPTS),
        equivalence_models=EQUIVALENCE_MODELS,
        log_format="paddlenlp",
        # fleet hybrid parallel: tensor parallel (GPUs); the harness GPT has no pipeline stages.
        model_parallel=frozenset({"tensor"}),
    ))


@hookimpl
def prepare_env(context: RunContext) -> ExecutionEnv | None:
    _layout_json(context)  # refuse a layout this device cannot run before building anything
    if context.env_mode == "current":
        package = "paddlepaddle-gpu" if context.devices.kind == "gpu" else "paddlepaddle"
        return current_env(context, package, ("numpy", "h5py"))
    spec = vendor_env_spec(REQUIREMENTS, context.vendor, "Paddle")
    return isolated_env(context, spec, variables={"GLOG_minloglevel": "2"})


@hookimpl
def unsupported_reason(context: RunContext) -> str | None:
    """What the Paddle scripts would refuse on this machine, said before anything runs."""
    from harness.errors import HarnessError

    if context.config.settings.precision == "fp8":
        return "the Paddle plugin trains fp32, fp16 or bf16, not fp8"
    if context.config.settings.precision == "fp16" and context.devices.kind == "cpu":
        return "Paddle fp16 training needs a GPU (on the CPU use bf16 or fp32)"
    if context.config.params.get("compile"):
        return ("compile=true: the Paddle plugin runs its models in dygraph (no paddle.jit.to_static); "
                "run it with compile=false")
    try:
        _layout_json(context)
        if context.env_mode != "current":
            vendor_env_spec(REQUIREMENTS, context.vendor, "Paddle")
    except HarnessError as exc:
        return str(exc)
    return None


def _layout_json(context: RunContext) -> str:
    from harness_paddle.parallel_layout import resolve_layout

    settings = context.config.settings
    layout = resolve_layout(context.config.hardware_config, context.config.params,
                            model=context.case.model, device_kind=context.devices.kind,
                            world=settings.world_size)
    return layout.model_dump_json()


def _data_argument(context: RunContext, dataset: DatasetInfo) -> str:
    folder = Path(dataset.path)
    if context.case.model == "gpt":
        return str(folder / dataset.files[0].removesuffix("_ids.npy"))
    if context.case.model == "bert":
        return str(folder / dataset.files[0])
    return str(folder)


@hookimpl
def matmul_probe(context: RunContext, env: ExecutionEnv):
    """Paddle matmuls on the vendor's paddle device at the run's precision, in the Paddle
    environment (shared_scripts)."""
    from harness_cases.shared_scripts import run_matmul_probe

    return run_matmul_probe(env, "paddle", context.config.device, context.config.settings.precision)


@hookimpl
def run(context: RunContext, env: ExecutionEnv, dataset: DatasetInfo) -> LaunchSpec | None:
    from harness_cases.shared_scripts import launch_scripts, scripts_pythonpath

    settings = context.config.settings
    model = context.case.model
    script = TRAIN_SCRIPTS[model]
    script_args = [str(script), "--config", str(context.run_dir / "config.json"),
                   "--data", _data_argument(context, dataset), "--parallel", _layout_json(context)]
    if model in CNN_MODELS:
        script_args += ["--model", model]
    if settings.world_size == 1:
        argv = [env.python, *script_args]
    else:
        argv = [env.python, str(SCRIPTS / "distributed_launch.py"), "--nproc_per_node", str(settings.nproc),
                "--log_dir", str(context.run_dir / "paddle_launch")]
        if settings.nnodes > 1:
            argv += ["--nnodes", str(settings.nnodes), "--master", str(context.rendezvous_endpoint),
                     "--rank", str(context.node_rank), "--job_id", str(context.job_id),
                     # like torchrun's: a lost rank ends the job on every node, no restarts
                     "--max_restart", "0"]
        argv += script_args
    variables = {**env.env, "PYTHONPATH": scripts_pythonpath(SCRIPTS)}
    if context.config.equivalence is not None:  # deterministic cuDNN kernels where there are any
        variables["FLAGS_cudnn_deterministic"] = "1"
    return LaunchSpec(argv=argv, env=variables, nproc=settings.nproc, nnodes=settings.nnodes,
                      log_format="paddleclas" if model in CNN_MODELS else "paddlenlp",
                      description=f"paddle {env.framework_version}",
                      scripts=launch_scripts(script, SCRIPTS))
