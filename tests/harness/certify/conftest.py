from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def pm():
    from harness.plugin_manager import make_plugin_manager

    return make_plugin_manager(load_entrypoints=False)


@pytest.fixture(scope="session")
def registry(pm):
    from harness.registry import Registry

    return Registry.from_plugins(pm)
