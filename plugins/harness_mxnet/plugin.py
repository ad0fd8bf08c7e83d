"""MXNet framework plugin: ResNet-50 and MobileNetV1 with Gluon in an isolated environment.

MXNet 1.9.1 needs ``numpy<1.24``, so it can never share an environment with Paddle 3 or
current PyTorch: ``harness.envs`` builds it its own. One process drives all devices of a
node through a kvstore (``device`` on GPUs, ``local`` on CPUs).
"""

from __future__ import annotations

from pathlib import Path

from harness import hookimpl
from harness.envs import EnvSpec
from harness.envs.prepare import current_env, isolated_env, vendor_env_spec
from harness.errors import UnavailableError
from harness.launch import usable_cores
from harness.models import DatasetInfo, ExecutionEnv, FrameworkSpec, LaunchSpec
from harness.models.context import RunContext

FRAMEWORK = "mxnet"
SCRIPTS = Path(__file__).parent / "scripts"
TRAIN_SCRIPTS = {"resnet50": SCRIPTS / "train_cnn.py", "mobilenet_v1": SCRIPTS / "train_cnn.py"}
MXNET_VERSION = "1.9.1"
_NUMPY = "numpy<1.24"  # MXNet 1.9 uses numpy aliases (np.bool, ...) removed in numpy 1.24
# numpy<1.24 has wheels up to CPython 3.11: the environment is built on Python 3.11 whatever
# Python runs harness (uv finds one, or downloads one where it may).
_PYTHON = "3.11"
REQUIREMENTS = {
    "cpu": EnvSpec.for_python(_PYTHON, name="mxnet-cpu",
                              requirements=(f"mxnet=={MXNET_VERSION}", _NUMPY)),
    "nvidia": EnvSpec.for_python(_PYTHON, name="mxnet-cu112",
                                 requirements=(f"mxnet-cu112=={MXNET_VERSION}", _NUMPY)),
}


@hookimpl
def register_frameworks(register) -> None:
    register(FrameworkSpec(
        name=FRAMEWORK,
        description=f"MXNet {MXNET_VERSION} Gluon, one process per node with a kvstore",
        models=frozenset(TRAIN_SCRIPTS),
        # The models whose script implements `harness equivalence`'s config section.
        equivalence_models=frozenset(TRAIN_SCRIPTS),
        log_format="gluoncv",
    ))


@hookimpl
def prepare_env(context: RunContext) -> ExecutionEnv | None:
    if context.env_mode == "current":
        package = "mxnet-cu112" if context.devices.kind == "gpu" else "mxnet"
        return current_env(context, package, ("numpy",))
    spec = vendor_env_spec(REQUIREMENTS, context.vendor, "MXNet")
    return isolated_env(context, spec)


@hookimpl
def unsupported_reason(context: RunContext) -> str | None:
    """What the MXNet script would refuse on this machine, said before anything runs."""
    settings = context.config.settings
    if settings.precision in ("bf16", "fp8"):
        return f"MXNet 1.9 Gluon Trainer trains fp32 or fp16, not {settings.precision}"
    if settings.precision == "fp16" and context.devices.kind == "cpu":
        return "MXNet fp16 training needs a GPU"
    if context.config.params.get("compile"):
        return ("compile=true: the MXNet plugin has no compile step (its Gluon models always run "
                "hybridized); run it with compile=false")
    if settings.nnodes > 1:
        return ("the MXNet plugin trains on one node (kvstore device/local); multi-node dist_sync "
                "needs a parameter-server launch it does not do")
    if context.env_mode != "current":
        try:
            vendor_env_spec(REQUIREMENTS, context.vendor, "MXNet")
        except UnavailableError as exc:
            return str(exc)
    return None


@hookimpl
def matmul_probe(context: RunContext, env: ExecutionEnv):
    """MXNet matmuls on the vendor's mxnet device at the run's precision, in the MXNet
    environment (shared_scripts)."""
    from harness_cases.shared_scripts import run_matmul_probe

    return run_matmul_probe(env, "mxnet", context.config.device, context.config.settings.precision)


@hookimpl
def run(context: RunContext, env: ExecutionEnv, dataset: DatasetInfo) -> LaunchSpec | None:
    from harness_cases.shared_scripts import launch_scripts, scripts_pythonpath

    settings = context.config.settings  # one node: unsupported_reason refused more, before this
    model = context.case.model
    argv = [env.python, str(TRAIN_SCRIPTS[model]), "--config", str(context.run_dir / "config.json"),
            "--data", dataset.path, "--model", model]
    variables = {**env.env, "PYTHONPATH": scripts_pythonpath(SCRIPTS)}
    if context.config.equivalence is not None:  # deterministic kernels where there are any
        variables.update(MXNET_ENFORCE_DETERMINISM="1", MXNET_CUDNN_AUTOTUNE_DEFAULT="0")
    if context.devices.kind == "cpu":
        # One process drives every CPU "device" of the run: it gets all the cores.
        variables["OMP_NUM_THREADS"] = str(usable_cores())
    return LaunchSpec(argv=argv, env=variables, nproc=settings.nproc, nnodes=1,
                      log_format="gluoncv", description=f"mxnet {env.framework_version}, "
                      f"one process over {settings.nproc} device(s)",
                      scripts=launch_scripts(TRAIN_SCRIPTS[model], SCRIPTS))
