"""The environment fingerprint recorded with every result."""

from __future__ import annotations

import platform

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


def environment_fingerprint(env: ExecutionEnv | None) -> EnvironmentFingerprint:
    packages = dict(env.packages) if env else {}
    if env and env.framework_version:
        packages.setdefault(env.framework, env.framework_version)
    return EnvironmentFingerprint(
        harness_version=__version__,
        python=platform.python_version(),
        platform=f"{platform.system()} {platform.release()} {platform.machine()}",
        cpu=cpu_model(),
        packages=packages,
        isolated_env=bool(env and env.isolated),
    )
