"""PyTorch framework plugin: GPT pre-training via train_gpt.py, launched with torchrun."""

from __future__ import annotations

import sys
from importlib import metadata
from pathlib import Path

from harness import hookimpl
from harness.models import DatasetInfo, ExecutionEnv, FrameworkSpec, LaunchSpec, ParsedLog
from harness.models.context import RunContext

FRAMEWORK = "pytorch"
SCRIPTS = Path(__file__).parent / "scripts"
TRAIN_SCRIPTS = {"gpt": SCRIPTS / "train_gpt.py"}


@hookimpl
def register_frameworks(register) -> None:
    register(FrameworkSpec(
        name=FRAMEWORK,
        description="PyTorch eager/compile, DDP via torchrun",
        models=frozenset(TRAIN_SCRIPTS),
        log_format="megatron",
    ))


@hookimpl
def register_log_formats(register) -> None:
    from harness_pytorch.megatron_log import MegatronFormat

    register(MegatronFormat())


@hookimpl
def prepare_env(context: RunContext) -> ExecutionEnv | None:
    if context.framework != FRAMEWORK:
        return None
    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        from harness.errors import UnavailableError

        raise UnavailableError(
            "PyTorch is not installed in this environment; install it with "
            "`pip install -e '.[torch]'` (CPU build) or use a machine that has it"
        ) from None
    return ExecutionEnv(python=sys.executable, framework=FRAMEWORK, framework_version=version,
                        packages={"torch": version, "numpy": metadata.version("numpy")},
                        description="current interpreter")


@hookimpl
def run(context: RunContext, env: ExecutionEnv, dataset: DatasetInfo) -> LaunchSpec | None:
    if context.framework != FRAMEWORK:
        return None
    settings = context.config.settings
    script = TRAIN_SCRIPTS[context.case.model]
    prefix = Path(dataset.path) / dataset.files[0].removesuffix("_ids.npy")
    script_args = [str(script), "--config", str(context.run_dir / "config.json"),
                   "--data-prefix", str(prefix)]
    if settings.world_size == 1:
        argv = [env.python, *script_args]
    else:
        argv = [env.python, "-m", "torch.distributed.run", f"--nproc-per-node={settings.nproc}"]
        if settings.nnodes == 1:
            argv.append("--standalone")
        else:
            argv += [f"--nnodes={settings.nnodes}", "--rdzv-backend=c10d",
                     f"--rdzv-endpoint={rendezvous_endpoint()}"]
        argv += script_args
    return LaunchSpec(argv=argv, env=dict(env.env), nproc=settings.nproc, nnodes=settings.nnodes,
                      log_format="megatron", description=f"torch {env.framework_version}")


def rendezvous_endpoint() -> str:
    """Multi-node runs meet at MASTER_ADDR:MASTER_PORT, which the user exports on every node."""
    import os

    from harness.errors import UserInputError

    addr = os.environ.get("MASTER_ADDR")
    if not addr:
        raise UserInputError("--nnodes > 1 needs MASTER_ADDR (and optionally MASTER_PORT) in the environment")
    return f"{addr}:{os.environ.get('MASTER_PORT', '29500')}"


@hookimpl
def parse_log(context: RunContext, log_path: Path) -> ParsedLog | None:
    if context.framework != FRAMEWORK:
        return None
    from harness_pytorch.megatron_log import MegatronFormat

    return MegatronFormat().parse_file(log_path, seq_len=int(context.config.params["seq_len"]))
