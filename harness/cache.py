"""Where the harness keeps reusable state (datasets, isolated environments) by default."""

from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """``$HARNESS_CACHE_DIR``, else ``$XDG_CACHE_HOME/harness``, else ``~/.cache/harness``."""
    base = os.environ.get("HARNESS_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "harness"
    )
    return Path(base)
