"""A Harness of the core's own plugins (fallbacks, log formats, case catalog) and fixture
plugins: what tests of the core load instead of the built-in framework and vendor plugins, so
that they test the core, not PyTorch's or the CPU vendor's plugin."""

from __future__ import annotations

from harness.app import Harness
from harness.plugin_manager import CORE_PLUGINS


def core_harness(*plugins: object) -> Harness:
    return Harness.load(builtins=CORE_PLUGINS, load_entrypoints=False, blocked=set(), extra=plugins)
