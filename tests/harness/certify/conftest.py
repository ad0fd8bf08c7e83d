from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def harness():
    from harness.app import Harness

    return Harness.load(load_entrypoints=False)


@pytest.fixture(scope="session")
def registry(harness):
    return harness.registry
