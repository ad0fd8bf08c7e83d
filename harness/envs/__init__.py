"""Isolated Python environments for framework plugins, cached by requirement set.

The core knows nothing about any framework: a plugin describes what it needs as an
``EnvSpec`` (requirements, extra index URLs) and ``ensure_environment`` returns a ready
virtual environment, building it once (with uv) and reusing it afterwards.
"""

from harness.envs.builder import ensure_environment, installer_available
from harness.envs.spec import EnvRecord, EnvSpec
from harness.envs.store import EnvStore, default_envs_root

__all__ = ["EnvRecord", "EnvSpec", "EnvStore", "default_envs_root", "ensure_environment",
           "installer_available"]
