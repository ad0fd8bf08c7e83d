"""What an isolated environment is made of (``EnvSpec``) and what was built (``EnvRecord``)."""

from __future__ import annotations

import hashlib
import json
import platform
import re
import sys
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

# A directory name must not depend on anything but the spec's own name and its hash.
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]+")


class EnvSpec(BaseModel):
    """A requirement set to install into a fresh virtual environment."""

    model_config = ConfigDict(frozen=True)

    name: str = Field(description="Human label, e.g. paddle-cpu; part of the folder name.")
    requirements: tuple[str, ...] = Field(
        description="pip requirement strings, e.g. numpy<1.24. The first is the framework's "
                    "own (the one a run's framework_requirement replaces).", min_length=1)
    index_urls: tuple[str, ...] = Field(
        default=(), description="Extra package indexes (e.g. a vendor's GPU wheel index)."
    )
    python: str = Field(
        default_factory=lambda: sys.executable,
        description="Base interpreter: a path, or a version such as 3.11 that uv finds or provides.",
    )
    python_version: str = Field(
        default_factory=platform.python_version,
        description="Version of ``python`` (e.g. 3.11.7, or 3.11 when python is a version); "
                    "part of the cache key.",
    )

    @classmethod
    def for_python(cls, version: str, **fields) -> "EnvSpec":
        """A spec built on Python ``version`` (e.g. ``3.11``) whatever runs harness."""
        return cls(python=version, python_version=version, **fields)

    @property
    def framework_distribution(self) -> str:
        """The normalized name of the framework's distribution (``paddlepaddle-gpu``)."""
        from packaging.requirements import Requirement
        from packaging.utils import canonicalize_name

        return canonicalize_name(Requirement(self.requirements[0]).name)

    def with_framework(self, requirement: str) -> "EnvSpec":
        """This spec with ``requirement`` installed in place of the framework's own."""
        return self.model_copy(update={"requirements": (requirement, *self.requirements[1:])})

    def key(self) -> str:
        """Hash of what determines the environment's content (not where it lives)."""
        payload = {
            "requirements": sorted(r.strip() for r in self.requirements),
            "index_urls": sorted(self.index_urls),
            "python_version": self.python_version,
            "machine": platform.machine(),
            "system": platform.system(),
        }
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def folder_name(self) -> str:
        return f"{_SAFE_NAME.sub('-', self.name)}-py{self.python_version}-{self.key()}"


class EnvRecord(BaseModel):
    """The metadata file (``harness-env.json``) inside every finished environment."""

    key: str
    name: str
    requirements: list[str]
    index_urls: list[str] = Field(default_factory=list)
    wheelhouse: str | None = Field(
        None, description="The local folder of wheels it was built from offline; None when "
                          "its packages came from the package indexes.")
    python_version: str
    base_python: str
    installer: str
    created_at: datetime
    last_used_at: datetime
    build_seconds: float
    packages: dict[str, str] = Field(description="Installed distributions and versions: the lock.")

    def python_in(self, folder: Path) -> Path:
        return folder / "bin" / "python"
