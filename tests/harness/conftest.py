"""Fixtures of the core's tests."""

from __future__ import annotations

import pytest

from harness.app import Harness
from tests.harness.core_harness import fixture_harness


@pytest.fixture
def gpt_harness() -> Harness:
    """The core's own plugins with the fixture GPT framework ``fixturefw`` and CPU vendor
    ``fixturecpu``; no built-in framework or vendor plugin is loaded."""
    return fixture_harness()
