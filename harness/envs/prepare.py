"""What framework plugins call from ``prepare_env``: an isolated env, or the current one."""

from __future__ import annotations

import sys
import time
from importlib import metadata
from pathlib import Path

from harness.envs.builder import ensure_environment
from harness.envs.spec import EnvSpec
from harness.envs.store import default_envs_root
from harness.errors import UnavailableError
from harness.models import ExecutionEnv
from harness.models.context import RunContext


def _logger(run_dir: Path):
    """Messages go to stderr and to the run's env.log, so the run folder says what happened."""
    def log(message: str) -> None:
        print(f"[env] {message}", file=sys.stderr, flush=True)
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            with open(run_dir / "env.log", "a", encoding="utf-8") as handle:
                handle.write(message + "\n")
        except OSError:
            pass
    return log


def vendor_env_spec(specs: dict[str, EnvSpec], vendor: str, framework: str) -> EnvSpec:
    """A framework plugin's ``EnvSpec`` for ``vendor`` (its build of the framework for that
    vendor's devices); for a vendor it has none for, ``UnavailableError`` naming the vendors
    it knows and ``--env current``."""
    try:
        return specs[vendor]
    except KeyError:
        raise UnavailableError(
            f"the {framework} plugin has no {framework} build for vendor {vendor!r} (it knows "
            f"{', '.join(sorted(specs))}); install the vendor's {framework} build and run with "
            "--env current"
        ) from None


def check_framework_requirement(context: RunContext, env: ExecutionEnv) -> None:
    """A run's ``framework_requirement`` must be what its environment was built from: a
    plugin that runs in an interpreter it did not build cannot honour it, and saying so
    beats a result that names a framework build it never ran."""
    requirement = context.config.settings.framework_requirement
    if requirement and requirement not in env.requirements:
        raise UnavailableError(
            f"framework_requirement {requirement!r} needs an isolated environment built from it, "
            f"but the {context.framework} plugin runs in the {env.description or 'interpreter'} "
            f"({env.python}); install {requirement} there and leave framework_requirement unset"
        )


def current_env(context: RunContext, framework_package: str, key_packages: tuple[str, ...] = ()
                ) -> ExecutionEnv:
    """The running interpreter, which must already have the framework (``--env current``)."""
    try:
        version = metadata.version(framework_package)
    except metadata.PackageNotFoundError:
        raise UnavailableError(
            f"--env current: {framework_package} is not installed in {sys.executable}; install it "
            f"there or drop --env current to let harness build an isolated environment"
        ) from None
    packages = {framework_package: version}
    for name in key_packages:
        try:
            packages[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    _logger(context.run_dir)(f"using the current interpreter {sys.executable} "
                             f"({framework_package} {version})")
    return ExecutionEnv(python=sys.executable, framework=context.framework,
                        framework_version=version, packages=packages,
                        description="current interpreter")


def isolated_env(context: RunContext, spec: EnvSpec,
                 variables: dict[str, str] | None = None) -> ExecutionEnv:
    """Build or reuse the virtual environment of ``spec`` under ``<cache>/envs``: with the
    run's ``framework_requirement`` in place of the spec's framework where it sets one, and
    offline from the run's wheelhouse where it has one."""
    from packaging.utils import canonicalize_name

    requirement = context.config.settings.framework_requirement
    if requirement:
        spec = spec.with_framework(requirement)
    log = _logger(context.run_dir)
    started = time.monotonic()
    folder, record, reused = ensure_environment(spec, default_envs_root(context.cache_dir), log,
                                                context.wheelhouse)
    elapsed = time.monotonic() - started
    log(f"prepare_env took {elapsed:.2f} s")
    version = next((v for name, v in record.packages.items()
                    if canonicalize_name(name) == spec.framework_distribution), None)
    return ExecutionEnv(
        python=str(record.python_in(folder)),
        env=dict(variables or {}),
        framework=context.framework,
        framework_version=version,
        isolated=True,
        # The environment's own Python too: it may differ from the one running harness.
        packages={"python": record.python_version, **record.packages},
        requirements=list(record.requirements),
        wheelhouse=record.wheelhouse,
        description=(f"{'reused' if reused else 'built'} isolated environment {folder.name} "
                     f"in {elapsed:.2f} s"),
    )
