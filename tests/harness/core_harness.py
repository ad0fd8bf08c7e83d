"""A Harness of the core's own plugins (fallbacks, log formats, case catalog) and fixture
plugins: what tests of the core load instead of the built-in framework and vendor plugins, so
that they test the core, not PyTorch's or the CPU vendor's plugin.

``core_harness(*plugins)`` blocks every built-in the core lets a user block (as
HARNESS_BLOCK_PLUGINS would) and registers ``plugins`` through the ordinary hooks;
``fixture_harness(*plugins)`` adds the fixture GPT framework ``fixturefw`` and CPU vendor
``fixturecpu`` (tests/fixtures/plugins/harness_fixturegpt) to them.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

from harness.app import Harness
from harness.plugin_manager import DEFAULT_PLUGINS, ESSENTIAL_PLUGINS

#: Every built-in plugin but the essential ones, which cannot be blocked.
BLOCKABLE_BUILTINS = frozenset(DEFAULT_PLUGINS) - ESSENTIAL_PLUGINS
#: Holds the fixture plugin package, imported from here as a top-level package (as an
#: installed plugin's is), so that its source files and script names are its own.
FIXTURE_PLUGINS_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "plugins"
FIXTURE_FRAMEWORK, FIXTURE_VENDOR = "fixturefw", "fixturecpu"


def core_harness(*plugins: object) -> Harness:
    return Harness.load(load_entrypoints=False, blocked=set(BLOCKABLE_BUILTINS), extra=plugins)


def fixture_plugins() -> tuple[ModuleType, ModuleType]:
    """The fixture framework and vendor plugin modules."""
    if str(FIXTURE_PLUGINS_DIR) not in sys.path:
        sys.path.insert(0, str(FIXTURE_PLUGINS_DIR))
    return (importlib.import_module("harness_fixturegpt.framework"),
            importlib.import_module("harness_fixturegpt.vendor"))


def fixture_harness(*plugins: object) -> Harness:
    return core_harness(*fixture_plugins(), *plugins)
