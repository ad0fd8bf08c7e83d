"""The environment fingerprint recorded with every result."""

from __future__ import annotations

import functools
import platform
import subprocess
from pathlib import Path

from harness import __version__
from harness.models import ExecutionEnv
from harness.models.result import EnvironmentFingerprint


def cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


@functools.lru_cache(maxsize=1)
def harness_git_sha() -> str | None:
    """The commit of the git checkout harness runs from, ``-dirty`` when it has uncommitted
    changes to tracked files; None outside a checkout or without git."""
    root = Path(__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return None
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        if sha.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "diff", "--quiet", "HEAD", "--"],
                               capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return sha.stdout.strip() + ("-dirty" if dirty.returncode == 1 else "")


def build_tag(version: str | None) -> str | None:
    """The local label of a PEP 440 version: ``cu128`` for ``2.8.0+cu128``."""
    if not version or "+" not in version:
        return None
    return version.split("+", 1)[1] or None


def environment_fingerprint(env: ExecutionEnv | None) -> EnvironmentFingerprint:
    packages = dict(env.packages) if env else {}
    if env and env.framework_version:
        packages.setdefault(env.framework, env.framework_version)
    return EnvironmentFingerprint(
        harness_version=__version__,
        harness_git_sha=harness_git_sha(),
        framework_build=(env.framework_build or build_tag(env.framework_version)) if env else None,
        python=platform.python_version(),
        platform=f"{platform.system()} {platform.release()} {platform.machine()}",
        cpu=cpu_model(),
        packages=packages,
        isolated_env=bool(env and env.isolated),
        requirements=list(env.requirements) if env else [],
        wheelhouse=env.wheelhouse if env else None,
    )
